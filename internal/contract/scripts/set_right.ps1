# placeholder: set_right (written by the host-access work)
