def get_memory_info(device_index=None):
    from . import cuda
    return cuda._raw_mem_get_info(device_index)
