""" Module for statistical  """

from .core import np


def hpd(trace):
    pass

def percentile(trace):
    pass

def autocorrrelation(trace):
    pass