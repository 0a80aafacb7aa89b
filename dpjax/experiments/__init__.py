"""One module per paper result, behind ``dpjax reproduce NAME``."""
