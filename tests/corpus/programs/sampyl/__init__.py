
name = "sampyl-mcmc"
__version__ = "0.3"

from .samplers import *
from .core import np
from .starting import find_MAP
from . import exceptions
from .distributions import *
from .model import Model
