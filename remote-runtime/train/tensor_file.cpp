// placeholder: tensor_file (being written)
