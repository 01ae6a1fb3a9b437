// placeholder: nvml (being written)
