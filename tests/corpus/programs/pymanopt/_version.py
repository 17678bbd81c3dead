__version__ = "2.2.1"  # written by setuptools_scm at install time; not in the repository
