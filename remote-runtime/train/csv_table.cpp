// placeholder: csv_table (being written)
