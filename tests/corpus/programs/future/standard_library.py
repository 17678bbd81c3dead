# See future/__init__.py: on Python 3 the standard library's names need no aliases.
def install_aliases():
    pass
