// placeholder: batch_size_search (being written)
