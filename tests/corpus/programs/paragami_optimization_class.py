# Source: rgiordan/paragami, docs/source/example_notebooks/optimization_class.ipynb, commit 059bb354b816bafe821d446ece2fb9b968a39d83
# (https://github.com/rgiordan/paragami), Apache licence 2.0: tests/corpus/LICENSE-paragami.
# The notebook's code cells, in order, made into a script (its '%matplotlib' lines left out).
# Changed: 1000 data points -> 200; plotting by the stand-in.
import autograd
import autograd.numpy as np
import scipy as sp
import example_utils
import matplotlib.pyplot as plt
import paragami
import time


dim = 2
num_obs = 200

mean_true = np.random.random(dim)
cov_true = np.random.random((dim, dim))
cov_true = 0.1 * np.eye(dim) + np.full((dim, dim), 1.0)

x = np.random.multivariate_normal(mean=mean_true, cov=cov_true, size=(num_obs, ))
plt.plot(x[:, 0], x[:, 1], 'k.')

mvn_pattern = paragami.PatternDict(free_default=True)
mvn_pattern['mean'] = paragami.NumericVectorPattern(length=dim)
mvn_pattern['cov'] = paragami.PSDSymmetricMatrixPattern(size=dim)

# ``example_utils.get_normal_log_prob`` returns the log probability of
# each datapoint x up to a constant.
def get_loss(x, sigma, mu):
    return -1 * np.sum(
        example_utils.get_normal_log_prob(x, sigma, mu))
       
get_free_loss = paragami.FlattenFunctionInput(
    lambda mvn_par: get_loss(x=x, sigma=mvn_par['cov'], mu=mvn_par['mean']),
    patterns=mvn_pattern,
    free=True)

mvn_par = mvn_pattern.random()
mvn_free = mvn_pattern.flatten(mvn_par)

objective = paragami.OptimizationObjective(get_free_loss)

def Optimize(objective, x0=np.zeros(mvn_pattern.flat_length())):
    opt_result = sp.optimize.minimize(
        x0=x0,
        fun=objective.f,
        jac=objective.grad,
        hessp=objective.hessian_vector_product,
        method='trust-ncg')
    return opt_result

print('\nOptimizing:')
opt_result = Optimize(objective)
print(opt_result.message)

print('\nOptimizing printing less:')
objective.reset()
objective.set_print_every(5)
opt_result = Optimize(objective)
print(opt_result.message)

print('\nOptimizing without reset:')
opt_result = Optimize(objective)
print(opt_result.message)

print('\nOptimizing without printing:')
objective.set_print_every(0)
opt_result = Optimize(objective)
print(opt_result.message)


opt_x = opt_result.x

print('f() evaluates the objective:\n{} = {}'.format(
    objective.f(opt_x), get_free_loss(opt_x)))

grad = objective.grad(opt_x)
print('\ngrad() evaluates the gradient:\n{}'.format(grad))

print('\nhessian() evaluates the Hessian matrix:\n{}'.format(objective.hessian(opt_x)))

print('\nhessian_vector_product() evaluates the Hessian-vector product:\n{}'.format(
    objective.hessian_vector_product(opt_x, grad)))

print('\nOptimizing with logging:')
objective.reset()
objective.set_print_every(0)
objective.set_log_every(2)
opt_result = Optimize(objective)
print(opt_result.message)

for log_entry in objective.optimization_log:
    print(log_entry)

plt.plot(
    [ entry[0] for entry in objective.optimization_log],
    [ entry[2] - opt_result.fun for entry in objective.optimization_log])
plt.xlabel('Iteration')
plt.xlabel('Difference from optimum')

objective.reset()
print(objective.optimization_log)

class CustomObjective(paragami.OptimizationObjective):
    def print_value(self, num_f_evals, x, f_val):
        grad = objective.grad(x)
        print('Iteration {}: gradient norm = {:0.8f}'.format(
            num_f_evals, np.linalg.norm(grad)))

    def log_value(self, num_f_evals, x, f_val):
        grad = self.grad(x)
        self.optimization_log.append((num_f_evals, np.linalg.norm(grad)))

custom_objective = CustomObjective(get_free_loss)

print('\nOptimizing with custom printing and logging:')
custom_objective.reset()
custom_objective.set_print_every(1)
custom_objective.set_log_every(1)
opt_result = Optimize(custom_objective)
print(opt_result.message)

plt.plot(
    [ entry[0] for entry in custom_objective.optimization_log],
    np.log([ entry[1] for entry in custom_objective.optimization_log]))
plt.xlabel('Iteration')
plt.xlabel('Log gradient norm')
