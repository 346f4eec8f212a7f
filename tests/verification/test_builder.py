"""Algorithm 3 builder: summing observations per successor, labels, and the bad-input errors."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.verification.builder import AbstractSystem, ObservationModel, build_chain
from perception_safety.verification.errors import VerificationError


def ring_system(n: int = 4, labels=None, controller=None) -> AbstractSystem:
    """States 0..n-1 on a line; observation ("go",) moves one step right (capped), ("stay",) stays."""

    def k(states, obs):
        return np.minimum(states + 1, n - 1) if obs == ("go",) else states

    return AbstractSystem(
        n_states=n,
        controller=controller or k,
        distance_m=lambda s: (n - 1 - s) * 5.0,
        labels=labels if labels is not None else {"last": np.arange(n) == n - 1},
        initial_states=[0],
        describe=lambda s: f"cell{s}",
    )


def test_transitions_are_sums_over_observations_per_bin():
    obs = ObservationModel((("go",), ("stay",)), [[0.9, 0.1], [0.25, 0.75]], [(0, 10), (10, 20)])
    chain = build_chain(ring_system(), obs)
    dense = chain.to_scipy().toarray()
    # distances 15, 10, 5, 0 -> bins 1, 1, 0, 0; the last state maps both observations onto itself
    expected = np.array([[0.75, 0.25, 0, 0], [0, 0.75, 0.25, 0], [0, 0, 0.1, 0.9], [0, 0, 0, 1.0]])
    np.testing.assert_allclose(dense, expected, atol=0)
    assert chain.n_transitions == 7
    assert list(chain.initial_states) == [0]


def test_pooled_model_ignores_distance():
    obs = ObservationModel((("go",), ("stay",)), [0.6, 0.4], None)
    dense = build_chain(ring_system(), obs).to_scipy().toarray()
    np.testing.assert_allclose(np.diag(dense)[:3], [0.4, 0.4, 0.4])


def test_storm_model_has_labels_and_matrix():
    obs = ObservationModel((("go",), ("stay",)), [0.6, 0.4], None)
    chain = build_chain(ring_system(), obs)
    model = chain.storm_model()
    assert model.nr_states == 4 and model.nr_transitions == 7
    assert set(model.labeling.get_labels()) >= {"init", "last"}
    assert model.labeling.get_states("last").get(3) and not model.labeling.get_states("last").get(2)


@pytest.mark.parametrize("bad", [float("nan"), -0.1, 1.5])
def test_nan_negative_or_above_one_probability_is_named(bad):
    with pytest.raises(VerificationError, match=r"observation probability of stay in bin 1 \[10, 20\) m"):
        ObservationModel((("go",), ("stay",)), [[0.5, 0.5], [0.5, bad]], [(0, 10), (10, 20)])


def test_row_not_summing_to_one_names_state_and_bin():
    obs = ObservationModel((("go",), ("stay",)), [[0.5, 0.5], [0.5, 0.4]], [(0, 10), (10, 20)])
    with pytest.raises(VerificationError, match=r"state cell0 sum to 0\.9.*bin 1 \[10, 20\) m"):
        build_chain(ring_system(), obs)


def test_missing_bin_names_state_and_distance():
    obs = ObservationModel((("go",), ("stay",)), [[0.5, 0.5], [0.5, 0.5]], [(0, 5), (10, 20)])
    with pytest.raises(VerificationError, match=r"distance 5 m of state cell2"):
        build_chain(ring_system(), obs)


def test_controller_leaving_the_model_is_named():
    def k(states, obs):
        return states + 1

    obs = ObservationModel((("go",),), [1.0], None)
    with pytest.raises(VerificationError, match=r"maps state cell3 under observation go to 4, outside"):
        build_chain(ring_system(controller=k), obs)


def test_bad_labels_are_rejected():
    obs = ObservationModel((("go",), ("stay",)), [0.6, 0.4], None)
    with pytest.raises(VerificationError, match="reserved"):
        build_chain(ring_system(labels={"init": np.ones(4, bool)}), obs)
    with pytest.raises(VerificationError, match="boolean mask"):
        build_chain(ring_system(labels={"x": np.ones(3, bool)}), obs)


def test_overlapping_bins_are_rejected():
    with pytest.raises(VerificationError, match="overlaps"):
        ObservationModel((("go",),), [[1.0], [1.0]], [(0, 10), (5, 20)])
