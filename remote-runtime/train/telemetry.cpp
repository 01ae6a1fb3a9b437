// placeholder: telemetry (being written)
