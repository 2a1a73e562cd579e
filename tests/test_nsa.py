"""NSA: the repair MDP, Table II networks, PPO training, checkpoints and the ``nsa`` backend."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hpcopt.agents import nsa  # noqa: E402
from hpcopt.models.dcas import DCASModel  # noqa: E402
from hpcopt.solvers import get_solver, solve  # noqa: E402
from hpcopt.solvers.dcas_nsa import NeuralSimulatedAnnealing  # noqa: E402
from hpcopt.topology import FatTree, block  # noqa: E402
from hpcopt.trainers import nsa_train  # noqa: E402

torch.set_num_threads(1)

TOPO = FatTree(40, 4, 2)  # 10 leaves, 5 pods
Q, N_MAX = 20, 8


def _windows(n=6, seed=0):
    return nsa_train.random_windows(n, seed=seed, topology=TOPO, max_jobs=4, n_max=N_MAX)


def _operator(arch="fcn1", seed=0, mode="greedy"):
    torch.manual_seed(seed)
    return nsa.LearnedRepair(nsa.ActorCritic(arch, Q), topology=TOPO, n_max=N_MAX, mode=mode)


# ----------------------------------------------------------------------------- the MDP
def test_state_shape_normalisation_and_padding():
    seq = np.array([0, 1, 5, 13, 39])
    st = nsa.encode_state(TOPO, seq, 6, [4, 2], q=Q, n_max=N_MAX)
    assert st.shape == (Q, 4) and st.dtype == np.float32
    np.testing.assert_allclose(st[:5, 0], TOPO.leaf[seq] / 9)  # 10 leaves
    np.testing.assert_allclose(st[:5, 1], TOPO.pod[seq] / 4)  # 5 pods
    assert st[4, 0] == pytest.approx(1.0) and st[4, 1] == pytest.approx(1.0)
    np.testing.assert_allclose(st[:5, 2], 6 / 8)
    np.testing.assert_allclose(st[:5, 3], (4 + 2) / (2 * 8))  # mean of the others / n_max
    assert not st[5:].any()
    last = nsa.encode_state(TOPO, seq, 3, [], q=Q, n_max=N_MAX)
    assert not last[:, 3].any()  # no other job left
    long = nsa.encode_state(TOPO, np.arange(30), 1, [], q=Q, n_max=N_MAX)
    assert long[Q - 1, 2] > 0  # only the first q entries of Q are described


def test_masking_never_picks_an_illegal_position():
    op = _operator(mode="sample")
    with torch.no_grad():  # push all mass towards illegal positions
        op.policy.actor[-1].bias[:] = torch.linspace(-50, 50, Q)
    rng = np.random.default_rng(0)
    model = _windows(1)[0]
    for size in range(1, 9):
        seq = np.arange(0, 40, 4)[:size + 2]  # |Q| <= 10 < q
        (p,) = op(model, seq, [size], rng)
        assert 0 <= p < seq.size
    st = torch.from_numpy(nsa.encode_state(TOPO, np.arange(7), 2, [], Q, N_MAX))[None]
    mask = torch.from_numpy(nsa.action_mask(7, Q))[None]
    with torch.no_grad():
        probs = torch.softmax(op.policy.logits(st, mask), -1)
    assert float(probs[0, 7:].sum()) == 0.0 and float(probs[0, :7].sum()) == pytest.approx(1)
    starts = [nsa_train._start_solution(m, "sequential", rng) for m in _windows(6)]
    eps = [nsa_train._cut_episode(s, 2, rng) for s in starts for _ in range(4)]
    lens = [e.seq.size for e in eps]
    batch = nsa_train.rollout(op.policy, eps, n_max=N_MAX, rng=rng)
    assert (batch["actions"] < batch["masks"].sum(1)).all()
    assert min(lens) < Q  # the check above did see masked positions


def test_reward_is_the_scaled_negative_repair_cost():
    rng = np.random.default_rng(3)
    op = _operator()
    model = _windows(1, seed=4)[0]
    ep = nsa_train._cut_episode(nsa_train._start_solution(model, "scas-exact", rng), 2, rng)
    seq, sizes = ep.seq.copy(), list(ep.sizes)
    batch = nsa_train.rollout(op.policy, [ep], n_max=N_MAX, rng=np.random.default_rng(1))
    cost = 0.0
    for a, n in zip(batch["actions"], sizes):
        nodes = block(seq, int(a), n)
        cost += TOPO.cost(nodes)
        seq = np.setdiff1d(seq, nodes)
    scale = 1000 * 6 * N_MAX
    assert batch["episode_rewards"][0] == pytest.approx(-cost / scale, rel=1e-6)
    assert (batch["returns"] == batch["episode_rewards"][0]).all()  # gamma = 1, one reward


# ----------------------------------------------------------------------------- networks
LISTED = {"fcn1": 36324, "fcn2": 40484, "fcn3": 51204,
          "cnn1": 71260, "cnn2": 71504, "cnn3": 117372}


@pytest.mark.parametrize("arch", sorted(nsa.ARCHS))
def test_table_ii_architectures(arch):
    actor = nsa.build_body(arch)
    assert nsa.n_parameters(actor) == LISTED[arch]
    assert actor(torch.zeros(2, 100, 4)).shape == (2, 100)
    critic = nsa.build_body(arch, out=1)
    assert critic(torch.zeros(2, 100, 4)).shape == (2, 1)
    linears = [m for m in actor if isinstance(m, torch.nn.Linear)]
    if arch.startswith("fcn"):
        # the printed totals are those of the listed layers on a q x 5 input
        assert nsa.n_parameters(nsa.build_body(arch, features=5)) == nsa.TABLE_II_PARAMS[arch]
        assert linears[0].in_features == 400
    else:
        assert linears[0].in_features == {"cnn1": 176, "cnn2": 176, "cnn3": 352}[arch]
        assert [m.out_features for m in linears] == [256, 100]


def test_unknown_architecture_is_one_clear_error():
    with pytest.raises(nsa.NSAError, match="cnn3"):
        nsa.build_body("cnn4")


# ----------------------------------------------------------------------------- checkpoints
def test_save_load_round_trip_gives_identical_actions(tmp_path):
    op = _operator("cnn1", seed=7, mode="sample")
    path = op.save(tmp_path / "op.pt", note="test")
    back = nsa.LearnedRepair.load(path, mode="sample")
    assert (back.arch, back.q, back.n_max, back.meta["note"]) == ("cnn1", Q, N_MAX, "test")
    for a, b in zip(op.policy.state_dict().values(), back.policy.state_dict().values()):
        assert torch.equal(a, b)
    for model in _windows(4, seed=2):
        sizes = sorted(model.sizes.tolist(), reverse=True)
        got = [f(model, model.idle_nodes, sizes, np.random.default_rng(5)) for f in (op, back)]
        assert got[0] == got[1]


def test_checkpoint_errors_are_one_line(tmp_path):
    with pytest.raises(nsa.NSAError, match="not found"):
        nsa.LearnedRepair.load(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(nsa.NSAError, match="cannot be read"):
        nsa.LearnedRepair.load(tmp_path / "junk.pt")
    op = nsa.LearnedRepair.load(_operator().save(tmp_path / "op.pt"))
    with pytest.raises(nsa.NSAError, match="trained for"):
        op.check(FatTree.preset("paper-1000"))
    with pytest.raises(nsa.NSAError, match="q=100"):
        op.check(TOPO, q=100)
    model = _windows(1)[0]
    with pytest.raises(nsa.NSAError, match="not found"):
        solve(model, "nsa", solver_options={"checkpoint": str(tmp_path / "missing.pt")})


# ----------------------------------------------------------------------------- PPO
def test_ppo_updates_change_the_weights_and_learn_a_toy_preference():
    """One job of 4 nodes on a Q whose only one-leaf block starts at position 0 (cost 6,000;
    every other start straddles leaves): PPO must raise the probability of position 0."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    policy = nsa.ActorCritic("fcn1", Q)
    before = [p.detach().clone() for p in policy.parameters()]
    opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    model = DCASModel(TOPO, np.r_[0:4, 5, 9, 13, 17, 21, 25, 29, 33, 37, 38], [4])

    def p0():
        st = torch.from_numpy(nsa.encode_state(TOPO, model.idle_nodes, 4, [], Q, N_MAX))[None]
        mask = torch.from_numpy(nsa.action_mask(model.n_idle, Q))[None]
        with torch.no_grad():
            return float(torch.softmax(policy.logits(st, mask), -1)[0, 0])

    first = p0()
    cfg = nsa_train.PPOConfig(lr=3e-3, batch=32, minibatch=32, epochs=2)
    for _ in range(15):
        eps = [nsa_train._Episode(model, model.idle_nodes, [4]) for _ in range(cfg.batch)]
        batch = nsa_train.rollout(policy, eps, n_max=N_MAX, rng=rng)
        stats = nsa_train.ppo_update(policy, opt, batch, cfg, rng)
    assert all(np.isfinite(list(stats.values())))
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters()))
    assert p0() > 2 * first


def test_group_baseline_repairs_each_destroyed_solution_group_times(tmp_path):
    cfg = nsa_train.PPOConfig(batch=16, minibatch=16, epochs=1, baseline="group", group=4)
    out = nsa_train.train(arch="fcn1", episodes=32, q=Q, n_max=N_MAX, windows=_windows(3),
                    topology=TOPO, ppo=cfg, out=tmp_path, progress=False, plot=False,
                    val_episodes=0)
    assert out["updates"] == 2 and out["ppo"]["baseline"] == "group"
    rng = np.random.default_rng(0)
    policy = nsa.ActorCritic("fcn1", Q)
    start = nsa_train._start_solution(_windows(1)[0], "sequential", rng)
    ep = nsa_train._cut_episode(start, 1, rng)
    batch = nsa_train.rollout(policy,
                              [nsa_train._Episode(ep.model, ep.seq, ep.sizes) for _ in range(4)],
                              n_max=N_MAX, rng=rng)
    batch["episode_rewards"][:] = [-1, -1, -1, -2]  # only the last repair is worse
    batch["returns"] = batch["episode_rewards"][batch["owner"]]
    before = policy.actor(torch.from_numpy(batch["states"][3:4])).detach()
    nsa_train.ppo_update(policy, torch.optim.SGD(policy.parameters(), lr=0.1), batch,
                         nsa_train.PPOConfig(batch=4, minibatch=4, epochs=1, baseline="group",
                                             group=4, entropy_coef=0.0), rng)
    after = policy.actor(torch.from_numpy(batch["states"][3:4])).detach()
    a = int(batch["actions"][3])
    assert len(set(batch["actions"].tolist())) > 1  # the test needs distinct actions
    assert (after - before)[0, a] < 0  # the worse-than-group action lost logit mass
    for bad in ({"baseline": "mean"}, {"group": 3}, {"baseline": "group", "group": 1},
                {"lr": 0.0}, {"epochs": 0}):
        with pytest.raises(nsa.NSAError):
            nsa_train.PPOConfig(batch=16, **bad)


def test_training_is_seeded_and_writes_its_outputs(tmp_path):
    windows = _windows(5, seed=9)
    kw = dict(arch="fcn1", episodes=64, q=Q, n_max=N_MAX, windows=windows, topology=TOPO,
              ppo=nsa_train.PPOConfig(batch=32, minibatch=32, epochs=1), checkpoint_every=1,
              progress=False, val_episodes=12, validate_every=2)
    a = nsa_train.train(seed=3, out=tmp_path / "a", plot=True, **kw)
    b = nsa_train.train(seed=3, out=tmp_path / "b", plot=False, **kw)
    assert a["updates"] == 2 and a["episodes"] == 64
    for name in ("nsa_fcn1.pt", "last.pt", "best.pt", "curve.csv", "curve.png", "train.json"):
        assert (tmp_path / "a" / name).is_file()
    rows = list(csv.DictReader((tmp_path / "a" / "curve.csv").read_text().splitlines()))
    assert len(rows) == 2 and all(r["val_reward"] for r in rows)  # updates 1 and 2
    assert a["best_val_reward"] == max(float(r["val_reward"]) for r in rows) < 0
    best = nsa.LearnedRepair.load(tmp_path / "a" / "best.pt")
    assert best.meta["val_reward"] == a["best_val_reward"]
    wa = nsa.LearnedRepair.load(tmp_path / "a" / "nsa_fcn1.pt").policy.state_dict()
    wb = nsa.LearnedRepair.load(tmp_path / "b" / "nsa_fcn1.pt").policy.state_dict()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert a["final_mean_reward"] == b["final_mean_reward"]
    c = nsa_train.train(seed=4, out=tmp_path / "c", plot=False,
                        resume=tmp_path / "a" / "nsa_fcn1.pt", **kw)
    assert (c["earlier_episodes"], c["total_episodes"]) == (64, 128)
    with pytest.raises(nsa.NSAError, match="cannot resume"):
        nsa_train.train(seed=4, out=tmp_path / "d", resume=tmp_path / "a" / "nsa_fcn1.pt",
                  **{**kw, "arch": "fcn2"})


# ----------------------------------------------------------------------------- backend
@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return str(_operator("fcn1", seed=1).save(tmp_path_factory.mktemp("nsa") / "op.pt"))


def test_nsa_backend_is_certified_and_never_worse_than_its_start(checkpoint):
    for model in _windows(4, seed=11):
        scas = solve(model, "sa", solver_options={"t_max": 0}).objective  # the SCAS optimum
        res = solve(model, "nsa", seed=1,
                    solver_options={"checkpoint": checkpoint, "t_max": 60})
        assert res.certificate.feasible and res.backend == "nsa"
        assert res.extra["start"] == "scas-exact" and res.extra["start_cost"] == scas
        assert res.objective <= scas + 1e-9
        assert res.extra["arch"] == "fcn1" and res.n_evals == 60


def test_nsa_backend_is_deterministic_given_a_seed(checkpoint):
    model = _windows(1, seed=12)[0]
    opts = {"checkpoint": checkpoint, "t_max": 80, "init": "sequential", "T_max": 1e6}
    runs = [solve(model, "nsa", seed=s, solver_options=opts) for s in (4, 4, 5)]
    assert runs[0].decision == runs[1].decision and runs[0].extra == runs[1].extra
    assert runs[0].extra["accepted"] != runs[2].extra["accepted"] or \
        runs[0].decision != runs[2].decision


def test_nsa_backend_options_and_availability(checkpoint, monkeypatch):
    model = _windows(1)[0]
    greedy = solve(model, "nsa", seed=0,
                   solver_options={"checkpoint": checkpoint, "t_max": 20, "mode": "greedy"})
    assert greedy.extra["mode"] == "greedy"
    with pytest.raises(nsa.NSAError, match="mode"):
        solve(model, "nsa", solver_options={"checkpoint": checkpoint, "mode": "best"})
    with pytest.raises(ValueError, match="unknown solver option"):
        solve(model, "nsa", solver_options={"checkpoint": checkpoint, "bogus": 1})
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    assert not NeuralSimulatedAnnealing.available()
    assert get_solver("nsa").name == "nsa"


def test_import_hpcopt_does_not_import_torch():
    code = ("import sys, hpcopt, hpcopt.solvers, hpcopt.agents; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_cli_train_nsa(tmp_path, capsys):
    from hpcopt.cli import main

    out = tmp_path / "run"
    rc = main(["train", "nsa", "--arch", "fcn1", "--episodes", "16", "--batch", "16",
               "--windows", "3", "--q", "20", "--seed", "1", "--out", str(out),
               "--val-episodes", "8",
               "--no-progress", "--no-plot"])
    assert rc == 0 and "trained 16 episodes" in capsys.readouterr().out
    op = nsa.LearnedRepair.load(out / "nsa_fcn1.pt")
    assert (op.arch, op.q, op.topology.name) == ("fcn1", 20, "paper-1000")
    assert main(["train", "nsa", "--arch", "cnn9", "--out", str(out), "--no-progress"]) == 2


def test_shipped_operator_for_the_paper_topology():
    path = nsa.DEFAULT_CHECKPOINT
    assert path.is_file() and path.stat().st_size < 1_000_000
    op = nsa.LearnedRepair.load(path)
    assert (op.arch, op.q, op.n_max, op.topology.name) == ("cnn3", 100, 40, "paper-1000")
    assert op.meta["total_episodes"] > 0 and op.meta["total_train_seconds"] > 0
    model = DCASModel("paper-1000", np.r_[0:37, 55:90, 300:333, 990:1000], [30, 12, 7, 25])
    res = solve(model, "nsa", seed=0, solver_options={"t_max": 40})
    assert res.certificate.feasible and res.extra["arch"] == "cnn3"
    assert res.objective <= res.extra["start_cost"] + 1e-9
    with pytest.raises(nsa.NSAError, match="trained for"):
        solve(_windows(1)[0], "nsa", solver_options={"t_max": 5})


def test_teacher_is_a_softmin_over_legal_block_costs():
    seq = np.array([0, 1, 2, 3, 8, 9, 12, 13, 30, 31], dtype=np.int64)
    p = nsa_train.teacher_probs(TOPO, seq, 2, Q, temperature=1e-9)
    costs = TOPO.interval_costs(seq, 2)[:, 1]
    assert p.shape == (Q,) and p[seq.size:].sum() == 0 and p.sum() == pytest.approx(1)
    assert set(np.flatnonzero(p)) == set(np.flatnonzero(costs == costs.min()))  # cold: argmin
    warm = nsa_train.teacher_probs(TOPO, seq, 2, Q, temperature=1e12)
    assert warm[:seq.size] == pytest.approx(np.full(seq.size, 1 / seq.size))  # hot: uniform


def test_imitation_warm_start_moves_the_policy_towards_the_teacher(tmp_path):
    """A few imitation updates raise the greedy policy's validation reward (the teacher
    prefers cheap blocks), and the recipe is recorded in the checkpoint."""
    windows = _windows(8, seed=2)
    kw = dict(arch="fcn1", q=Q, n_max=N_MAX, windows=windows, topology=TOPO, seed=0,
              ppo=nsa_train.PPOConfig(batch=32, minibatch=32, epochs=1, lr=3e-3),
              progress=False, plot=False, val_episodes=64, validate_every=1000)
    cold = nsa_train.train(out=tmp_path / "cold", episodes=32, **kw)
    warm = nsa_train.train(out=tmp_path / "warm", episodes=32, imitation=60, temperature=500.0,
                           **kw)
    assert warm["final_val_reward"] > cold["final_val_reward"]
    assert (warm["imitation_updates"], warm["teacher_temperature"]) == (60, 500.0)
    assert cold["imitation_updates"] == 0 and cold["teacher_temperature"] is None
    with pytest.raises(nsa.NSAError, match="temperature"):
        nsa_train.train(out=tmp_path / "bad", episodes=32, imitation=1, temperature=0.0, **kw)
