# A stand-in for the part of the ``future`` package's ``past`` (MIT licence) that kgof
# imports: ``past.utils.old_div``, Python 2's division, as ``past`` defines it.
