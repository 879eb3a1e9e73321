# placeholder: read_instance (written by the host-access work)
