"""Stand-in torch.cuda._utils: the device-argument funnel of torch.cuda's Python API, as real torch has it."""


def _get_device_index(device, optional=False, allow_cpu=False):
    import torch
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type == "cpu" and allow_cpu:
            return -1
        if device.type != "cuda":
            raise ValueError("Expected a cuda device, but got: %s" % (device,))
        device = device.index
    if isinstance(device, torch.cuda.device):
        return device.idx
    if device is None:
        if optional:
            return torch.cuda.current_device()
        raise ValueError("Expected a torch.device with a specified index or an integer, but got:None")
    return int(device)
