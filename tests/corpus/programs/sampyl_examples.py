# The examples notebook of mcleonard/sampyl (examples/Examples.ipynb, MIT licence, see
# tests/corpus/LICENSE-sampyl) as a script: a normal logp by Metropolis and NUTS, a Poisson
# model of phone calls with parameters named λ1 and λ2.
# Changed: the notebook's magics and its warnings filter left out; 10000 samples (burn 2000,
# thin 4) -> 40 (burn 8), 2100 (burn 100) -> 10 (burn 2); the linear model (the tutorial's,
# sampyl_tutorial.py) and the figures' layout left out; plotting off.
import matplotlib.pyplot as plt
import sampyl as smp
from sampyl import np

mu, sig = 3, 2
def logp(x):
    return  -np.log(sig) - (x - mu)**2/(2*sig**2)

start = smp.find_MAP(logp, {'x':1.})
metro = smp.Metropolis(logp, start)
chain = metro(40, burn=8, thin=4)

plt.plot(chain.x)

nuts = smp.NUTS(logp, start)
chain = nuts(10, burn=2)

plt.plot(chain)

# Fake data for the day before and after placing the ad.
# We'll make the calls increase by 2 an hour. Record data for each
# hour over two work days.
before = np.random.poisson(7, size=16)
after = np.random.poisson(9, size=16)

# Define the log-P function here
def logp(λ1, λ2):
    model = smp.Model()
    # Poisson log-likelihoods
    model.add(smp.poisson(before, rate=λ1),
              smp.poisson(after, rate=λ2))

    # Exponential log-priors for rate parameters
    model.add(smp.exponential(λ1),
              smp.exponential(λ2))
    
    return model()

start = smp.find_MAP(logp, {'λ1':1., 'λ2':1.})
sampler = smp.Metropolis(logp, start)
chain = sampler(40, burn=8, thin=4)

print(sampler.var_names)

plt.plot(chain.λ1)
plt.plot(chain.λ2)

delta = chain.λ2 - chain.λ1
p = np.mean(delta > 0)
effect = np.mean(delta)
CR = np.percentile(delta, (2.5, 97.5))
print("{:.3f} probability the rate of phone calls increased".format(p))
print("delta = {:.3f}, 95% CR = {{{:.3f} {:.3f}}}".format(effect, *CR))

nuts = smp.NUTS(logp, start)
chain = nuts.sample(10, burn=2)
_ = plt.plot(chain.λ1)
_ = plt.plot(chain.λ2)

delta = chain.λ2 - chain.λ1
p = np.mean(delta > 0)
effect = np.mean(delta)
CR = np.percentile(delta, (2.5, 97.5))
print("{:.3f} probability the rate of phone calls increased".format(p))
print("delta = {:.3f}, 95% CR = {{{:.3f} {:.3f}}}".format(effect, *CR))
