# Source: HIPS/autograd, examples/data_mnist.py, commit bff107b8d71a444a1160deade3e1cbd0b92f4fa6
# (https://github.com/HIPS/autograd), MIT licence: tests/corpus/LICENSE-autograd.
# Changed: mnist() returns synthetic images and labels (32 training, 32 test, MNIST's
# shapes and types) instead of downloading and parsing MNIST.
import array
import gzip
import os
import struct
from urllib.request import urlretrieve

import numpy as np


def download(url, filename):
    if not os.path.exists("data"):
        os.makedirs("data")
    out_file = os.path.join("data", filename)
    if not os.path.isfile(out_file):
        urlretrieve(url, out_file)


def mnist():
    base_url = "https://storage.googleapis.com/cvdf-datasets/mnist/"

    def parse_labels(filename):
        with gzip.open(filename, "rb") as fh:
            _magic, _num_data = struct.unpack(">II", fh.read(8))
            return np.array(array.array("B", fh.read()), dtype=np.uint8)

    def parse_images(filename):
        with gzip.open(filename, "rb") as fh:
            _magic, num_data, rows, cols = struct.unpack(">IIII", fh.read(16))
            return np.array(array.array("B", fh.read()), dtype=np.uint8).reshape(num_data, rows, cols)

    # synthetic instead of the download: MNIST's shapes and types, 32 training and 32 test
    # images of random pixels, from a fixed seed
    rs = np.random.RandomState(0)
    train_images = rs.randint(0, 256, size=(32, 28, 28)).astype(np.uint8)
    train_labels = rs.randint(0, 10, size=32).astype(np.uint8)
    test_images = rs.randint(0, 256, size=(32, 28, 28)).astype(np.uint8)
    test_labels = rs.randint(0, 10, size=32).astype(np.uint8)

    return train_images, train_labels, test_images, test_labels
