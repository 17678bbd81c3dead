__all__ = [
    "ComplexCircle",
    "ComplexGrassmann",
    "Elliptope",
    "Euclidean",
    "ComplexEuclidean",
    "FixedRankEmbedded",
    "Grassmann",
    "HermitianPositiveDefinite",
    "SpecialHermitianPositiveDefinite",
    "Oblique",
    "PSDFixedRank",
    "PSDFixedRankComplex",
    "PoincareBall",
    "Positive",
    "Product",
    "SkewSymmetric",
    "SpecialOrthogonalGroup",
    "Sphere",
    "SphereSubspaceComplementIntersection",
    "SphereSubspaceIntersection",
    "Stiefel",
    "Symmetric",
    "SymmetricPositiveDefinite",
    "UnitaryGroup",
]

from .complex_circle import ComplexCircle
from .euclidean import ComplexEuclidean, Euclidean, SkewSymmetric, Symmetric
from .fixed_rank import FixedRankEmbedded
from .grassmann import ComplexGrassmann, Grassmann
from .group import SpecialOrthogonalGroup, UnitaryGroup
from .hyperbolic import PoincareBall
from .oblique import Oblique
from .positive import Positive
from .positive_definite import (
    HermitianPositiveDefinite,
    SpecialHermitianPositiveDefinite,
    SymmetricPositiveDefinite,
)
from .product import Product
from .psd import Elliptope, PSDFixedRank, PSDFixedRankComplex
from .sphere import (
    Sphere,
    SphereSubspaceComplementIntersection,
    SphereSubspaceIntersection,
)
from .stiefel import Stiefel
