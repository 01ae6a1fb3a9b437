// placeholder: train_config (being written)
