# placeholder: LSA P/Invoke helpers
