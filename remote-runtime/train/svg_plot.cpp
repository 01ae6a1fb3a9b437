// placeholder: svg_plot (being written)
