# A stand-in for the part of PythonCharmers' ``future`` package (MIT licence) that kgof
# imports (kgof supports Python 2 and 3 through it; it is not installed here): on Python 3,
# ``standard_library.install_aliases()`` does nothing and ``utils.with_metaclass`` is its
# definition in future/utils/__init__.py.
