// placeholder: pack_command (being written)
