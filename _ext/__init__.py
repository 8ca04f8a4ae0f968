"""本书的 Sphinx 扩展（``_config.yml`` 的 ``local_extensions`` 从这里加载，测试用 ``from _ext import ...`` 导入）。"""
