# rgiordan/paragami's package (https://github.com/rgiordan/paragami), commit
# 059bb354b816bafe821d446ece2fb9b968a39d83, Apache licence 2.0: tests/corpus/LICENSE-paragami.
# Changed: its tests/ left out; numeric_array_patterns.py: np.product (gone from NumPy 2) -> np.prod.
from paragami.pattern_containers import \
    PatternDict, PatternArray, \
    register_pattern_json, get_pattern_from_json, save_folded, load_folded
from paragami.numeric_array_patterns import \
    NumericArrayPattern, \
    NumericVectorPattern, \
    NumericScalarPattern
from paragami.psdmatrix_patterns import PSDSymmetricMatrixPattern
from paragami.function_patterns import \
    FlattenFunctionInput, FoldFunctionInput, \
    FlattenFunctionOutput, FoldFunctionOutput, \
    FoldFunctionInputAndOutput, FlattenFunctionInputAndOutput, \
    TransformFunctionInput, TransformFunctionOutput
from paragami.simplex_patterns import SimplexArrayPattern
from paragami.optimization_lib import \
    PreconditionedFunction, \
    OptimizationObjective
import paragami.autograd_supplement_lib

from ._version import get_versions
__version__ = get_versions()['version']
del get_versions
