"""What is benchmarked, read on both sides: the libraries (``adapters``: each one's declaration,
and in its env its decoder, formats and transform mappings), the transform ``catalog``, ``recipes``
and user ``pipelines`` (with ``pipeline_sources``: pipelines in a library's own format), the GPU
recipes, array ``layout`` rules and the library x transform ``matrix``.

The driver imports these for the declarations; a library's env imports them to build its calls.
They import nothing from measuring/, planning/ or analysis/.
"""
