from mnist_speedup import model


def test_parameter_count():
    # 784*800+800 + 800*800+800 + 800*10+10
    assert model.n_parameters() == 1_276_810


def test_flops_against_hand_count():
    b = 500
    # forward: 2*B*(784*800 + 800*800 + 800*10) = 2*500*1,275,200 = 1,275,200,000
    forward = 1_275_200_000
    # weight gradients: same again; input gradients of layers 2 and 3: 2*500*(640,000 + 8,000)
    backward = 1_275_200_000 + 648_000_000
    assert model.matmul_flops(b) == forward + backward == 3_198_400_000
    # bias 2*500*1610 = 1,610,000; relu 2*500*1600 = 1,600,000;
    # dropout 2*500*(784+800+800) = 2,384,000; xent 5*500*10 = 25,000; adam 12*1,276,810 = 15,321,720
    assert model.elementwise_flops(b) == 1_610_000 + 1_600_000 + 2_384_000 + 25_000 + 15_321_720
    assert model.training_step_flops(b) == 3_198_400_000 + 20_940_720


def test_layer_shapes_cover_every_matmul():
    shapes = model.layer_matmul_shapes(64)
    assert len(shapes) == 8
    assert sum(2 * m * k * n for m, k, n in shapes) == model.matmul_flops(64)
