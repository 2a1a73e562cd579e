"""ASA: the adaptive queue-wait estimator (Algorithm 1 of the ASA paper, Souza et al.,
the Adaptive Scheduling Algorithm, section 3.2).  This
module is the estimator only; proactive workflow submission is built on top of it.

What it learns
--------------
For every *key* (a job geometry: a core count, or any str/int/tuple naming one) the estimator
keeps a distribution ``p`` over m fixed candidate waits theta_1 < ... < theta_m (seconds).
The default grid is the spec's resolution of the paper's "m = 53, up to ~28 h (100k s),
multiples of 10, 100, 1k, 10k, 100k s, more in the 10s and 100s" (section 4.3):
10..200 step 10 (20 values), 250..1000 step 50 (16), 2000..9000 step 1000 (8),
10000..80000 step 10000 (8) and 100000 (1).

Algorithm 1, online (spec "Algorithm 1 (exact)")
------------------------------------------------
* ``p_0 = 1/m`` for each candidate; a round t starts with ``L_t = 0``.
* One ``sample(key)`` is one proactive submission: an index ``a ~ p_t`` and its wait
  ``theta_a``.  Its loss is known when the job starts: ``observe(key, a, true_wait)`` adds
  the 0/1 loss of eq. (3) -- 0 if ``theta_a`` is the candidate nearest the true wait
  (absolute seconds; ties go to the smaller candidate; ``distance="log"`` measures
  ``|log1p(theta) - log1p(w)|`` instead), 1 otherwise -- to ``L_t[a]`` only.
* The round closes as soon as ``max_a L_t[a] > 1`` (Algorithm 1's ``while max <= 1``); then
  ``p_{t+1} = p_t * exp(-gamma_t * L_t) / N_t`` and ``L`` is reset.  ``gamma`` is a constant
  (default 1, the ``exp(-l)`` of the proof) or ``"hedge"``: ``gamma_t = sqrt(8 ln m / t)``
  for the t-th round of that key (the spec's options; the paper only asks non-increasing).
* Samples may be outstanding while others are observed (several stages in flight); a loss
  counts in the round that is open when it is observed.

``p`` is kept as normalised log-probabilities: ``p * exp(-L)`` underflows to exactly 0 in
float64 after a few hundred rounds, and a candidate at 0 could never come back after the
true wait moves to it.  ``state(key)["p"]`` is ``exp`` of it.

Sampling policies (section 4.4, Figure 5; spec "Sampling policies")
-------------------------------------------------------------------
* ``default``: Algorithm 1 as above.
* ``greedy``: the candidate with the smallest cumulative loss, ties to the smaller wait.
  The true wait is known at ``observe``, so the 0/1 loss of *every* candidate is known; the
  cumulative loss is that full-information sum over all observations of the key (the
  paper's "the minimum perceived loss is always used").  This is follow-the-leader: after
  the true wait changes it keeps the old wait until the new one has been observed as often
  -- the "stuck" behaviour of Figure 5 (our resolution; the paper gives no formula).
* ``tuned``: ``default``, and after each real observation w the estimator replays
  ``repeats`` (R, default 50 as in section 4.4) samples ``a ~ p`` scored against w, closing
  rounds as usual.  It biases p toward the last observed wait and converges fastest.
All three keep Algorithm 1's state (``p``, rounds) up to date; they differ in what
``sample`` returns and in the replays.

Prior from a start-time estimate (ours)
---------------------------------------
The paper lists "using the resource manager estimate features" among the options Algorithm 1
explores (section 3.2) and notes that such estimates "can speed-up ASA convergence"
(section 5).  With ``prior=q > 0`` the estimator gets one more action, index m: "submit
ahead by the start-time estimate of this submission" (the EASY shadow time of a simulator,
Slurm's ``squeue --start`` minus now).  ``sample(key, estimate_s=E)`` may return
``(m, E)``; ``observe(key, i, w, estimate_s=E)`` scores it with the same 0/1 loss (0 when
E's nearest candidate is w's).  Its initial probability is q, the m candidates share
``1 - q``; after that it is an expert like any other, so Algorithm 1 learns how far to trust
the estimate: a good estimate keeps its weight when the true wait moves (the candidates
must be re-learnt), a poor one is dropped.  A call without ``estimate_s`` samples among the
candidates only (p restricted and renormalised) and leaves the action's losses untouched.
``prior=0`` (default) is the paper's estimator.  ``benchmarks/asa_convergence.py`` reports
runs with and without, for accurate and noisy estimates.

Theorem 1 (Appendix A, eq. (4)): with probability > 1 - delta,
``sum_s l_s(theta^{s-1}) - sum_s l_s(theta_bar) <= 4 eta(t) + ln m + sqrt(2 t ln(m/delta))``
with eta(t) the number of rounds; ``tests/test_asa.py`` checks it on stationary waits.

Findings (``benchmarks/asa_convergence.py``, benchmarks/README.md):
* Theorem 1 as printed does not hold for the paper's m = 53: with a fixed true wait and
  t = 1,000 the realized regret exceeded the bound (delta = 0.01) in 20 of 20 runs (up to
  1.24x).  While p is near uniform a round lasts about 9 wrong samples (a birthday bound
  over 52 wrong actions) and ``4 eta`` allows 4 per round.  It held in all runs with m <= 10,
  and eq. (12) of the proof (each loss weighted by its probability) holds for m = 53.
* Only the sampled action is charged and there is no importance weighting, so an action
  drawn often is charged more for the same error rate.  With a fixed true wait, an estimate
  action right 90% of the time (prior 0.5) ends 1,000 iterations at p = 0.002-0.04, in one
  of three seeds below always-wrong candidates (about 0.006) that are rarely drawn and so
  rarely charged.  This, and the 0/1 loss on a fine grid, is why ``default`` is slow.

State is per key and is meant to be kept across workflows and runs, as the paper keeps it
across its 54 runs: ``save(path)`` / ``ASAEstimator.load(path)`` write and read JSON (format
``hpcopt-asa/1``) with every float and each key's random-generator state, so a loaded
estimator continues exactly as the saved one would have.  Each key has its own generator
(seeded from ``seed`` and a digest of the key), so the samples of one key do not depend on
when other keys are used.  numpy only.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import numbers
from pathlib import Path

import numpy as np

from hpcopt.errors import HpcoptError, closest

FORMAT = "hpcopt-asa/1"
POLICIES = ("default", "greedy", "tuned")
DISTANCES = ("abs", "log")

# The spec's 53-value grid (specs/asa.md, "Candidates"), seconds.
DEFAULT_CANDIDATES: tuple[float, ...] = tuple(
    [float(v) for v in range(10, 201, 10)]
    + [float(v) for v in range(250, 1001, 50)]
    + [float(v) for v in range(2000, 9001, 1000)]
    + [float(v) for v in range(10000, 80001, 10000)]
    + [100000.0]
)


class EstimatorError(HpcoptError, ValueError):
    """Bad input to the ASA estimator (names the field, what was received and expected)."""


def _fail(field: str, msg: str):
    raise EstimatorError(f"ASAEstimator {field}: {msg}")


def _canon_key(key, field="key"):
    """The key as plain Python (str, int, float, bool, None, tuples of those)."""
    if key is None or isinstance(key, (str, bool)):
        return str(key) if isinstance(key, str) else key
    if isinstance(key, numbers.Integral):
        return int(key)
    if isinstance(key, numbers.Real):
        v = float(key)
        if not math.isfinite(v):
            _fail(field, f"a float key must be finite, got {key!r}")
        return v
    if isinstance(key, tuple):
        return tuple(_canon_key(k, field) for k in key)
    _fail(field, f"expected a str, int, float, bool, None or a tuple of those, "
                 f"got {type(key).__name__}")


def _encode_key(key):
    return [_encode_key(k) for k in key] if isinstance(key, tuple) else key


def _decode_key(obj):
    return tuple(_decode_key(k) for k in obj) if isinstance(obj, list) else obj


def _wait(value, field) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        _fail(field, f"expected a number of seconds, got {value!r}")
    if not math.isfinite(v) or v < 0:
        _fail(field, f"expected a finite wait >= 0 seconds, got {value!r}")
    return v


def _count(value, field, minimum=0) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        _fail(field, f"expected an integer >= {minimum}, got {value!r}")
    return int(value)


class _KeyState:
    """Algorithm 1's variables for one key (plus the greedy totals and counters)."""

    __slots__ = ("logp", "round_loss", "cumulative", "rounds", "samples", "observations",
                 "replays", "last_wait", "rng", "_cum")

    def __init__(self, logp0: np.ndarray, rng: np.random.Generator | None):
        n = logp0.size
        self.logp = logp0.copy()
        self.round_loss = np.zeros(n)
        self.cumulative = np.zeros(n)
        self.rounds = 0
        self.samples = 0
        self.observations = 0
        self.replays = 0
        self.last_wait = None
        self.rng = rng
        self._cum = None  # cached cumulative distribution of p (a list, for bisect)

    def cdf(self) -> list:
        if self._cum is None:
            c = np.cumsum(np.exp(self.logp))
            self._cum = (c / c[-1]).tolist()
        return self._cum


class ASAEstimator:
    """Queue-wait estimator of ASA (Algorithm 1 of the ASA paper, section 3.2).

    Parameters
    ----------
    candidates : increasing waits in seconds (default: the spec's 53-value grid to 100,000 s).
    policy : ``"default"`` (Algorithm 1), ``"greedy"`` or ``"tuned"`` (section 4.4, Fig. 5).
    repeats : R, the replays per real observation of ``tuned`` (50, as in section 4.4).
    gamma : the learning rate of line 7: a constant > 0 (1, the proof's ``exp(-l)``) or
        ``"hedge"`` (``sqrt(8 ln n / t)`` in round t, n actions).
    seed : non-negative integer; everything is deterministic given it.
    prior : initial probability in [0, 1) of the start-time-estimate action (0: none).
    distance : ``"abs"`` (seconds, the default) or ``"log"`` -- what "nearest" measures.
    """

    def __init__(self, candidates=None, policy="default", repeats=50, gamma=1.0, seed=0,
                 prior=0.0, distance="abs"):
        if candidates is None:
            cand = list(DEFAULT_CANDIDATES)
        else:
            try:
                cand = [float(c) for c in candidates]
            except (TypeError, ValueError):
                _fail("candidates", f"expected a sequence of waits in seconds, got {candidates!r}")
            if not cand:
                _fail("candidates", "expected at least one candidate wait, got none")
            for i, c in enumerate(cand):
                if not math.isfinite(c) or c < 0:
                    _fail("candidates", f"expected finite waits >= 0, got {c!r} at position {i}")
                if i and c <= cand[i - 1]:
                    _fail("candidates", f"expected strictly increasing waits, got {c:g} after "
                                        f"{cand[i - 1]:g} at position {i}")
        if not isinstance(policy, str) or policy not in POLICIES:
            hint = closest(policy, POLICIES) if isinstance(policy, str) else ""
            _fail("policy", f"unknown policy {policy!r}; expected one of "
                            f"{', '.join(POLICIES)}.{hint}".rstrip("."))
        if isinstance(gamma, str):
            if gamma != "hedge":
                _fail("gamma", f"expected a positive number or 'hedge', got {gamma!r}")
        else:
            try:
                g = float(gamma)
            except (TypeError, ValueError):
                _fail("gamma", f"expected a positive number or 'hedge', got {gamma!r}")
            if isinstance(gamma, bool) or not math.isfinite(g) or g <= 0:
                _fail("gamma", f"expected a positive number or 'hedge', got {gamma!r}")
            gamma = g
        try:
            q = float(prior)
        except (TypeError, ValueError):
            q = -1.0
        if isinstance(prior, bool) or not 0 <= q < 1:
            _fail("prior", f"expected a probability in [0, 1), got {prior!r}")
        if distance not in DISTANCES:
            _fail("distance", f"expected one of {', '.join(DISTANCES)}, got {distance!r}")
        self.candidates: tuple[float, ...] = tuple(cand)
        self.policy = policy
        self.repeats = _count(repeats, "repeats")
        self.gamma = gamma
        self.seed = _count(seed, "seed")
        self.prior = q
        self.distance = distance
        self._m = len(cand)
        self._n = self._m + (1 if q > 0 else 0)  # actions: the candidates (+ the estimate)
        self._logp0 = np.full(self._n, math.log((1 - q) / self._m))
        if q > 0:
            self._logp0[self._m] = math.log(q)
        # midpoints between neighbours: the nearest candidate by bisection
        if distance == "abs":
            self._mid = [(a + b) / 2 for a, b in zip(cand, cand[1:])]
        else:
            self._mid = [math.expm1((math.log1p(a) + math.log1p(b)) / 2)
                         for a, b in zip(cand, cand[1:])]
        self._keys: dict = {}

    # ------------------------------------------------------------------ helpers
    @property
    def m(self) -> int:
        """Number of candidate waits."""
        return self._m

    @property
    def n_actions(self) -> int:
        """m, plus 1 for the start-time-estimate action when ``prior > 0`` (its index is m)."""
        return self._n

    def nearest(self, wait_s) -> int:
        """Index of the candidate nearest ``wait_s`` (ties to the smaller candidate)."""
        w = _wait(wait_s, "true_wait")
        return bisect.bisect_left(self._mid, w)

    def loss(self, index: int, wait_s, estimate_s=None) -> int:
        """Eq. (3): 0 if action ``index`` is the candidate nearest ``wait_s``, else 1 (the
        estimate action: 0 if ``estimate_s``'s nearest candidate is ``wait_s``'s)."""
        a = self._index(index)
        best = self.nearest(wait_s)
        if a == self._m:
            return 0 if self._estimate_index(estimate_s, required=True) == best else 1
        return 0 if a == best else 1

    def _index(self, index) -> int:
        if isinstance(index, bool) or not isinstance(index, numbers.Integral) \
                or not 0 <= index < self._n:
            _fail("index", f"expected an action index in 0..{self._n - 1}, got {index!r}")
        return int(index)

    def _estimate_index(self, estimate_s, required=False) -> int | None:
        """The candidate nearest a start-time estimate (None when there is none)."""
        if estimate_s is None:
            if required:
                _fail("estimate_s", f"action {self._m} is the start-time estimate; pass the "
                                    f"estimate_s that sample() was given")
            return None
        if self._n == self._m:
            _fail("estimate_s", "this estimator has no estimate action; build it with "
                                "prior > 0 to use start-time estimates")
        return bisect.bisect_left(self._mid, _wait(estimate_s, "estimate_s"))

    def _state(self, key, create=True) -> _KeyState | None:
        k = _canon_key(key)
        st = self._keys.get(k)
        if st is None and create:
            st = self._keys[k] = _KeyState(self._logp0, np.random.Generator(
                np.random.PCG64(np.random.SeedSequence([self.seed, *self._key_words(k)]))))
        return st

    @staticmethod
    def _key_words(key) -> list[int]:
        digest = hashlib.blake2b(json.dumps(_encode_key(key)).encode(), digest_size=16).digest()
        return [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]

    def _draw(self, st: _KeyState, u: float, with_estimate: bool) -> int:
        """Inverse-CDF draw from p; without an estimate, from p restricted to the candidates."""
        cdf = st.cdf()
        if with_estimate or self._n == self._m:
            return min(bisect.bisect_right(cdf, u), self._n - 1)
        return min(bisect.bisect_right(cdf, u * cdf[self._m - 1]), self._m - 1)

    def _add(self, st: _KeyState, index: int, loss: float) -> None:
        """Algorithm 1 lines 5 and 3/7: accumulate, close the round when max L > 1."""
        st.round_loss[index] += loss
        if st.round_loss[index] > 1:
            self._close(st)

    def _close(self, st: _KeyState) -> None:
        st.rounds += 1
        g = self.gamma if not isinstance(self.gamma, str) else \
            math.sqrt(8 * math.log(self._n) / st.rounds) if self._n > 1 else 1.0
        lw = st.logp - g * st.round_loss
        top = lw.max()
        st.logp = lw - (top + math.log(np.exp(lw - top).sum()))
        st.round_loss = np.zeros(self._n)
        st._cum = None

    def _losses(self, best: int, est: int | None) -> np.ndarray:
        """The full 0/1 loss vector of one observation (estimate action: 0 when unknown)."""
        vec = np.ones(self._n)
        vec[best] = 0.0
        if self._n > self._m:
            vec[self._m] = 0.0 if est is None or est == best else 1.0
        return vec

    # ------------------------------------------------------------------ the API
    def sample(self, key, estimate_s=None) -> tuple[int, float]:
        """One proactive submission for ``key``: ``(index, wait_s)`` of the action used.

        ``default``/``tuned``: ``a ~ p_t`` (Algorithm 1 line 4); ``greedy``: the smallest
        cumulative loss, ties to the smaller index.  ``estimate_s`` (estimators with
        ``prior > 0``): this submission's start-time estimate, returned as the wait when the
        estimate action (index m) is drawn; without it only candidates are drawn.
        """
        est = self._estimate_index(estimate_s)
        st = self._state(key)
        st.samples += 1
        if self.policy == "greedy":
            a = int(np.argmin(st.cumulative if est is not None else st.cumulative[:self._m]))
        else:
            a = self._draw(st, st.rng.random(), est is not None)
        return a, (float(estimate_s) if a == self._m else self.candidates[a])

    def observe(self, key, index, true_wait, estimate_s=None) -> int:
        """The wait the submission made with action ``index`` really had; returns its loss.

        Adds the 0/1 loss to the open round (closing it when some action's loss exceeds 1),
        the full loss vector to the greedy totals, and for ``tuned`` replays R samples.
        ``estimate_s``: the start-time estimate given to ``sample`` (needed when index == m;
        without it the estimate action is left out of the totals and the replays).
        """
        a = self._index(index)
        best = self.nearest(true_wait)
        est = self._estimate_index(estimate_s, required=(a == self._m))
        st = self._state(key)
        st.observations += 1
        st.last_wait = float(true_wait)
        vec = self._losses(best, est)
        st.cumulative += vec
        loss = int(vec[a])
        if loss:
            self._add(st, a, 1.0)
        if self.policy == "tuned" and self.repeats:
            self._replay(st, vec.tolist(), est is not None)
        return loss

    def _replay(self, st: _KeyState, vec: list, with_estimate: bool) -> None:
        """``tuned``: R draws a ~ p scored with the observation's loss vector (a hot loop:
        the same steps as ``_draw`` and ``_add``, with the CDF refreshed after each round)."""
        full = with_estimate or self._n == self._m
        top = (self._n if full else self._m) - 1
        cdf = st.cdf()
        scale = 1.0 if full else cdf[self._m - 1]
        rl = st.round_loss
        for u in st.rng.random(self.repeats).tolist():
            r = bisect.bisect_right(cdf, u * scale)
            if r > top:
                r = top
            if vec[r]:
                rl[r] += 1.0
                if rl[r] > 1:
                    self._close(st)
                    cdf = st.cdf()
                    scale = 1.0 if full else cdf[self._m - 1]
                    rl = st.round_loss
        st.replays += self.repeats

    def mode(self, key, estimate_s=None) -> tuple[int, float]:
        """The current best guess: argmax p (greedy: its pick), ties to the smaller index;
        the estimate action only when ``estimate_s`` is given."""
        est = self._estimate_index(estimate_s)
        st = self._state(key, create=False)
        if st is None:
            st = _KeyState(self._logp0, None)
        k = self._n if est is not None else self._m
        a = int(np.argmin(st.cumulative[:k]) if self.policy == "greedy"
                else np.argmax(st.logp[:k]))
        return a, (float(estimate_s) if a == self._m else self.candidates[a])

    def keys(self) -> list:
        """The keys seen so far, in first-use order."""
        return list(self._keys)

    def state(self, key) -> dict:
        """A JSON-ready snapshot of ``key``'s state (the initial one for an unseen key).

        ``p`` (the distribution over the actions; with ``prior > 0`` the last entry is the
        estimate action), ``round_loss`` (L_t of the open round), ``cumulative``
        (full-information loss totals, greedy's criterion), ``rounds`` (closed rounds),
        ``eta`` (rounds created, the open one included: Theorem 1's eta(t)), ``samples``,
        ``observations``, ``replays``, ``last_wait``.
        """
        st = self._state(key, create=False)
        if st is None:
            st = _KeyState(self._logp0, None)
        return {
            "key": _canon_key(key),
            "p": np.exp(st.logp).tolist(),
            "round_loss": st.round_loss.tolist(),
            "cumulative": st.cumulative.tolist(),
            "rounds": st.rounds,
            "eta": st.rounds + (1 if st.round_loss.any() else 0),
            "samples": st.samples,
            "observations": st.observations,
            "replays": st.replays,
            "last_wait": st.last_wait,
        }

    # ------------------------------------------------------------------ persistence
    def config(self) -> dict:
        return {"candidates": list(self.candidates), "policy": self.policy,
                "repeats": self.repeats, "gamma": self.gamma, "seed": self.seed,
                "prior": self.prior, "distance": self.distance}

    def to_dict(self) -> dict:
        """Everything, JSON-ready: the configuration and each key's exact state."""
        keys = []
        for k, st in self._keys.items():
            keys.append({
                "key": _encode_key(k),
                "logp": st.logp.tolist(),
                "round_loss": st.round_loss.tolist(),
                "cumulative": st.cumulative.tolist(),
                "rounds": st.rounds, "samples": st.samples,
                "observations": st.observations, "replays": st.replays,
                "last_wait": st.last_wait,
                "rng": st.rng.bit_generator.state,
            })
        return {"format": FORMAT, "config": self.config(), "keys": keys}

    @classmethod
    def from_dict(cls, data: dict) -> ASAEstimator:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            got = data.get("format") if isinstance(data, dict) else type(data).__name__
            _fail("state", f"expected format {FORMAT!r}, got {got!r}")
        try:
            est = cls(**data["config"])
            for rec in data["keys"]:
                key = _canon_key(_decode_key(rec["key"]))
                bg = np.random.PCG64()
                bg.state = rec["rng"]
                st = _KeyState(est._logp0, np.random.Generator(bg))
                for name in ("logp", "round_loss", "cumulative"):
                    arr = np.array(rec[name], dtype=float)
                    if arr.shape != (est.n_actions,):
                        _fail("state", f"{name} of key {key!r} has {arr.size} values, "
                                       f"expected {est.n_actions}")
                    setattr(st, name, arr)
                for name in ("rounds", "samples", "observations", "replays"):
                    setattr(st, name, _count(rec[name], f"state {name}"))
                st.last_wait = rec["last_wait"]
                est._keys[key] = st
        except (KeyError, TypeError) as exc:
            _fail("state", f"malformed saved state ({type(exc).__name__}: {exc})")
        return est

    def save(self, path) -> Path:
        """Write the estimator to ``path`` as JSON (format ``hpcopt-asa/1``)."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict()))
        return path

    @classmethod
    def load(cls, path) -> ASAEstimator:
        """Read an estimator written by ``save``; it continues exactly where it stopped."""
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            _fail("path", f"cannot read estimator state {str(path)!r}: {exc}")
        return cls.from_dict(data)
