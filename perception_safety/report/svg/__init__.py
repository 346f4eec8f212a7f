"""Figures drawn as SVG text by the project itself (no plotting library): the report's fixed cost stays small
(issue 27) and the figures are vector, searchable and readable at any zoom.

`canvas` writes the elements (escaped text, shapes, clip paths), `axes` maps data to pixels (linear scales, nice
ticks, grids, labels, legends, panel grids), `heatmap` draws matrices with a colour map and a colour bar.
"""
