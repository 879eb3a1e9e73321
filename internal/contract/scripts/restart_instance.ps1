# placeholder: restart_instance (written by the host-access work)
