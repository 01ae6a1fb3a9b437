// placeholder: advice (being written)
