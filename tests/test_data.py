"""Validation and pytree behaviour of dpjax.data."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.data import Dataset, NeighbouringPair, add_remove, make_dataset, make_pair, replace_one


def small():
    return make_dataset(x=np.arange(8.0).reshape(4, 2), y=np.array([0.0, 1.0, 0.0, 1.0]))


def test_make_dataset_basic_properties():
    d = small()
    assert d.num_slots == 4
    assert d.num_records == 4 and type(d.num_records) is int
    np.testing.assert_array_equal(d["y"], [0, 1, 0, 1])
    rec = d.record(2)
    np.testing.assert_array_equal(rec["x"], [4.0, 5.0])
    assert float(rec["y"]) == 0.0


def test_different_record_counts_rejected():
    with pytest.raises(ValueError, match="different record counts"):
        make_dataset(x=np.zeros((3, 2)), y=np.zeros(4))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_rejected_with_record_index(bad):
    x = np.zeros((5, 2))
    x[3, 1] = bad
    with pytest.raises(ValueError, match=r"non-finite value in record 3"):
        make_dataset(x=x)


def test_scalar_empty_nonnumeric_and_missing_fields_rejected():
    with pytest.raises(ValueError, match="needs at least one field"):
        make_dataset()
    with pytest.raises(ValueError, match="scalar"):
        make_dataset(x=1.0)
    with pytest.raises(ValueError, match="0 records"):
        make_dataset(x=np.zeros((0, 2)))
    with pytest.raises(TypeError, match="numeric"):
        make_dataset(x=np.array(["a", "b"]))


def test_mask_validation():
    with pytest.raises(ValueError, match=r"mask has shape \(3,\); it must have shape \(4,\)"):
        make_dataset(mask=[1, 1, 1], x=np.zeros(4))
    with pytest.raises(ValueError, match="only 0"):
        make_dataset(mask=[1, 0.5, 1, 1], x=np.zeros(4))
    d = make_dataset(mask=[1, 0, 1, 1], x=np.zeros(4))
    assert d.num_records == 3 and type(d.num_records) is int


def test_num_records_is_an_int_without_warnings():
    """Issue 14: num_records was a JAX float and warned about float64 truncation outside x64 mode."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = make_dataset(mask=[1, 0, 1, 1], x=np.zeros(4))
        pair = add_remove(small(), 1)
        counts = (d.num_records, pair.dataset.num_records, pair.neighbour.num_records)
    assert counts == (3, 4, 3) and all(type(c) is int for c in counts)


@pytest.mark.parametrize("index", [-1, 4, 100])
def test_index_out_of_range(index):
    d = small()
    with pytest.raises(ValueError, match=rf"index={index} is out of range"):
        add_remove(d, index)
    with pytest.raises(ValueError, match=rf"index={index} is out of range"):
        replace_one(d, index, {"x": np.zeros(2), "y": 0.0})


@pytest.mark.parametrize("index", [1.0, "1", True])
def test_index_must_be_integer(index):
    with pytest.raises(TypeError, match="must be an integer"):
        add_remove(small(), index)


def test_replace_one_changes_exactly_one_record():
    d = small()
    pair = replace_one(d, 2, {"x": np.array([-1.0, -2.0]), "y": 1.0})
    assert pair.adjacency == "replace-one" and pair.index == 2
    np.testing.assert_array_equal(pair.neighbour["x"][2], [-1.0, -2.0])
    for i in (0, 1, 3):
        np.testing.assert_array_equal(pair.neighbour["x"][i], d["x"][i])
    np.testing.assert_array_equal(pair.neighbour.mask, d.mask)
    # the pair is recognised as neighbours by make_pair, at the same index
    assert make_pair(pair.dataset, pair.neighbour).index == 2


def test_replace_one_record_validation():
    d = small()
    with pytest.raises(ValueError, match="exactly the dataset's fields"):
        replace_one(d, 0, {"x": np.zeros(2)})
    with pytest.raises(ValueError, match=r"record\['x'\] has shape \(3,\)"):
        replace_one(d, 0, {"x": np.zeros(3), "y": 0.0})
    with pytest.raises(ValueError, match="not finite"):
        replace_one(d, 0, {"x": np.array([np.nan, 0.0]), "y": 0.0})


def test_add_remove_mask_semantics():
    d = small()
    pair = add_remove(d, 1)
    assert pair.adjacency == "add-remove"
    np.testing.assert_array_equal(pair.neighbour.mask, [1, 0, 1, 1])
    np.testing.assert_array_equal(pair.dataset.mask, [1, 1, 1, 1])
    # static shapes: the removed record's data stays, only its mask changes
    np.testing.assert_array_equal(pair.neighbour["x"], d["x"])
    assert pair.neighbour.num_records == 3
    # a masked sum equals the sum over the remaining records
    total = float(np.sum(np.asarray(pair.neighbour.mask) * np.asarray(pair.neighbour["y"])))
    assert total == float(d["y"][0] + d["y"][2] + d["y"][3])
    # removing an already removed record is an error
    with pytest.raises(ValueError, match="already removed"):
        add_remove(pair.neighbour, 1)
    assert make_pair(pair.dataset, pair.neighbour, "add-remove").index == 1


def test_make_pair_rejects_more_than_one_difference_and_none():
    d = small()
    x2 = np.asarray(d["x"]).copy()
    x2[0, 0] += 1
    x2[3, 1] += 1
    other = make_dataset(x=x2, y=d["y"])
    with pytest.raises(ValueError, match=r"differ in 2 records \(indices \[0, 3\]\)"):
        make_pair(d, other)
    with pytest.raises(ValueError, match="differ in 0 records"):
        make_pair(d, small())


def test_make_pair_structure_and_adjacency_checks():
    d = small()
    with pytest.raises(ValueError, match="adjacency='swap'"):
        make_pair(d, d, "swap")
    with pytest.raises(ValueError, match="same fields"):
        make_pair(d, make_dataset(x=d["x"]))
    with pytest.raises(ValueError, match="same fields"):
        make_pair(d, make_dataset(x=np.zeros((5, 2)), y=np.zeros(5)))
    # a data change is not an add-remove pair
    x2 = np.asarray(d["x"]).copy()
    x2[1, 0] = 99
    with pytest.raises(ValueError, match="add-remove pair must have record 1 present"):
        make_pair(d, make_dataset(x=x2, y=d["y"]), "add-remove")
    # a mask change is not a replace-one pair
    with pytest.raises(ValueError, match="replace-one pair must have the same mask"):
        make_pair(d, add_remove(d, 1).neighbour, "replace-one")
    with pytest.raises(ValueError, match="adjacency='other'"):
        NeighbouringPair(dataset=d, neighbour=d, index=0, adjacency="other")


def test_pytree_round_trip_through_jit_and_tree_map():
    d = small()
    leaves, treedef = jax.tree_util.tree_flatten(d)
    assert len(leaves) == 3  # x, y, mask
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert isinstance(rebuilt, Dataset)
    with jax.enable_x64(True):
        doubled = jax.tree_util.tree_map(lambda a: 2 * a, d)
    np.testing.assert_array_equal(doubled["x"], 2 * np.asarray(d["x"]))

    @jax.jit
    def masked_y_sum(ds: Dataset):
        return jnp.sum(ds.mask * ds["y"]), ds

    pair = add_remove(d, 3)
    with jax.enable_x64(True):  # the fields are float64 (they stay so outside x64 mode): compute in float64
        s, out = masked_y_sum(pair.neighbour)
    assert float(s) == 1.0
    assert isinstance(out, Dataset)
    np.testing.assert_array_equal(out.mask, pair.neighbour.mask)

    # a NeighbouringPair is a pytree with static index/adjacency: jit sees them as constants
    @jax.jit
    def differing_y(p: NeighbouringPair):
        return p.dataset["y"][p.index] - p.neighbour["y"][p.index]

    rp = replace_one(d, 0, {"x": np.zeros(2), "y": 5.0})
    with jax.enable_x64(True):
        assert float(differing_y(rp)) == -5.0
    pleaves, ptree = jax.tree_util.tree_flatten(rp)
    back = jax.tree_util.tree_unflatten(ptree, pleaves)
    assert back.index == 0 and back.adjacency == "replace-one"


def test_vmap_over_records():
    d = small()
    with jax.enable_x64(True):  # float64 fields: a float64 computation, no truncation warning
        sums = jax.vmap(lambda rec: jnp.sum(rec["x"]) + rec["y"])(d.fields)
    np.testing.assert_array_equal(sums, [1.0, 6.0, 9.0, 14.0])


def test_float64_data_stays_float64_without_x64_mode():
    """Outside jax's x64 mode a float64 record must not be rounded to float32: the pair would
    then differ in many records (the rounding), not one."""
    import jax

    x = np.linspace(0.1, 0.9, 7)[:, None] + 1e-12
    with jax.enable_x64(False):
        d = make_dataset(x=x, y=np.arange(7.0))
        pair = replace_one(d, 2, {"x": np.array([5.0]), "y": np.array(1.0)})
        removed = add_remove(d, 4)
    assert d["x"].dtype == np.float64 and pair.neighbour["x"].dtype == np.float64
    np.testing.assert_array_equal(np.asarray(d["x"]), x)
    assert make_pair(pair.dataset, pair.neighbour).index == 2
    assert removed.neighbour.mask.dtype == np.float64
