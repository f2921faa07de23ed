"""nn: modules, parameters, initialisations and the functional library (``torch.nn``).

Room: nn. Builds on tensor, ops and grad_mode; never imports the compiler.
"""
from numgrad.nn import functional  # noqa: F401
from numgrad.nn import functional_norm as _functional_norm  # noqa: F401  (enters batch_norm, ... into F)
from numgrad.nn import init
from numgrad.nn import utils
from numgrad.nn.parameter import Parameter  # noqa: F401
from numgrad.nn.module import Module  # noqa: F401
from numgrad.nn.containers import Sequential, ModuleList, ModuleDict  # noqa: F401
from numgrad.nn.layers import Identity, Linear, Embedding, LayerNorm, Dropout  # noqa: F401
from numgrad.nn.activation import ReLU, Tanh, Sigmoid, GELU, Softmax, LogSoftmax  # noqa: F401
from numgrad.nn.loss import MSELoss, CrossEntropyLoss  # noqa: F401
from numgrad.nn.conv import Conv1d, Conv2d, ConvTranspose2d  # noqa: F401
from numgrad.nn.pooling import (  # noqa: F401
    MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d, AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
)
from numgrad.nn.normalization import BatchNorm1d, BatchNorm2d, GroupNorm  # noqa: F401
from numgrad.nn.shape_and_dropout import Flatten, Unflatten, Dropout1d, Dropout2d  # noqa: F401
from numgrad.nn.activation_extra import LeakyReLU, ELU, SiLU, Softplus, Hardtanh  # noqa: F401
from numgrad.nn.loss_extra import (  # noqa: F401
    NLLLoss, BCELoss, BCEWithLogitsLoss, L1Loss, SmoothL1Loss, HuberLoss, KLDivLoss,
)
from numgrad.nn.rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401,E501
from numgrad.nn.attention import (MultiheadAttention, TransformerEncoderLayer,  # noqa: F401
                                  TransformerEncoder)
from numgrad.nn.transformer import (TransformerDecoderLayer, TransformerDecoder,  # noqa: F401
                                    Transformer)
from numgrad.nn.data_parallel import DataParallel  # noqa: F401
