"""书的维护脚本，作为包运行：``python -m tools.execute_notebooks``、``python -m tools.web_assets`` ……"""
