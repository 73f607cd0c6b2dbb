"""Optimizers (``zyx.optim``) and learning-rate schedulers (``zyx.optim.lr_scheduler``), as in PyTorch."""
from zyx.optim import lr_scheduler
from zyx.optim.adagrad import Adagrad
from zyx.optim.adam import Adam, AdamW
from zyx.optim.optimizer import Optimizer
from zyx.optim.rmsprop import RMSprop
from zyx.optim.sgd import SGD

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
