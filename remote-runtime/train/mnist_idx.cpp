// placeholder: mnist_idx (being written)
