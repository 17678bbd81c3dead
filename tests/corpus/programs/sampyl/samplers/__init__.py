from .metropolis import Metropolis
from .hamiltonian import Hamiltonian
from .NUTS import NUTS
from .chain import Chain
from .slice import Slice
from .base import Sampler
