"""Pieces of a Python exec adapter for kda-oracle (adapters/README.md, "The exec protocol").

rejections  an ordered table (pattern on an exception's type and message -> contract rule) and the
            protocol line a raised exception is answered with
"""
