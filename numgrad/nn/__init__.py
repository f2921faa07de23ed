"""nn: modules, parameters, initialisations and the functional library (``torch.nn``).

Room: nn. Builds on tensor, ops and grad_mode; never imports the compiler.
"""
from numgrad.nn import functional, init, utils  # noqa: F401
from numgrad.nn.parameter import Parameter  # noqa: F401
from numgrad.nn.module import Module  # noqa: F401
from numgrad.nn.containers import Sequential, ModuleList, ModuleDict  # noqa: F401
from numgrad.nn.layers import Identity, Linear, Embedding, LayerNorm, Dropout  # noqa: F401
from numgrad.nn.activation import ReLU, Tanh, Sigmoid, GELU, Softmax, LogSoftmax  # noqa: F401
from numgrad.nn.loss import MSELoss, CrossEntropyLoss  # noqa: F401
from numgrad.nn.rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401,E501
from numgrad.nn.attention import (MultiheadAttention, TransformerEncoderLayer,  # noqa: F401
                                  TransformerEncoder)
