class _Flags(object):
    pass


cuda = _Flags()
cuda.matmul = _Flags()
cuda.matmul.allow_tf32 = True
cudnn = _Flags()
cudnn.allow_tf32 = True
