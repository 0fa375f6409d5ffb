import pytest

from mnist_speedup.spec import workloads

MLP = workloads.of({"type": "mlp"})


def test_parameter_count():
    # 784*800+800 + 800*800+800 + 800*10+10
    assert MLP.n_parameters() == 1_276_810


def test_flops_against_hand_count():
    b = 500
    # forward: 2*B*(784*800 + 800*800 + 800*10) = 2*500*1,275,200 = 1,275,200,000
    forward = 1_275_200_000
    # weight gradients: same again; input gradients of layers 2 and 3: 2*500*(640,000 + 8,000)
    backward = 1_275_200_000 + 648_000_000
    assert MLP.matmul_flops(b) == forward + backward == 3_198_400_000
    # bias 2*500*1610 = 1,610,000; relu 2*500*1600 = 1,600,000;
    # dropout 2*500*(784+800+800) = 2,384,000; xent 5*500*10 = 25,000; adam 12*1,276,810 = 15,321,720
    assert MLP.elementwise_flops(b) == 1_610_000 + 1_600_000 + 2_384_000 + 25_000 + 15_321_720
    assert MLP.training_step_flops(b) == 3_198_400_000 + 20_940_720


def test_products_cover_every_matmul():
    products = MLP.products(64)
    assert len(products) == 8 and {p.kind for p in products} == {"matmul"}
    assert sum(2 * m * k * n for m, k, n in (p.shape for p in products)) == MLP.matmul_flops(64)


def test_the_default_spec_is_the_article_network():
    assert workloads.types()["mlp"].with_defaults({"type": "mlp"}) == {
        "type": "mlp",
        "hidden": [800, 800],
        "dropout": [0.2, 0.5, 0.5],
    }
    assert MLP.words() == "MLP 784-800-800-10"
    assert workloads.words({"type": "mlp", "hidden": [32]}) == "MLP 784-32-10"


def test_cnn_count_by_hand():
    cnn = workloads.of({"type": "cnn"})  # conv 5x5x32, pool 2, conv 5x5x64, pool 2, dense 1024, 10
    assert cnn.sides() == [28, 14, 7]
    b = 10
    conv1 = 2 * b * 28 * 28 * 25 * 1 * 32
    conv2 = 2 * b * 14 * 14 * 25 * 32 * 64
    dense = 2 * b * (7 * 7 * 64 * 1024 + 1024 * 10)
    # forward + weight gradients of every layer, input gradients of all but the first
    assert cnn.matmul_flops(b) == 2 * conv1 + 3 * conv2 + 3 * dense
    assert cnn.n_parameters() == (25 * 32 + 32) + (25 * 32 * 64 + 64) + (3136 * 1024 + 1024) + (1024 * 10 + 10)
    assert cnn.words() == "CNN conv5x5x32-conv5x5x64-dense1024-10"


def test_unknown_type_is_refused():
    with pytest.raises(workloads.WorkloadError, match="unknown workload type 'rnn'"):
        workloads.of({"type": "rnn"})


@pytest.mark.parametrize(
    "flops, words", [(656e6, "656 MFLOP"), (8.3e9, "8.3 GFLOP"), (2.5e6, "2.5 MFLOP"), (12e3, "12 kFLOP")]
)
def test_flop_words(flops, words):
    assert workloads.flop_words(flops) == words
