// placeholder: npy_file (being written)
