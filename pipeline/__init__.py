# this folder is the package prior.pipeline (prior/pipeline links here); under its folder name it would load a second copy
if __name__ != "prior.pipeline":
    raise ImportError(f"{__name__!r} is part of prior: import prior.pipeline instead")
