"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：证明块的标题用中文。

sphinx-proof 的 ``{prf:theorem}`` 等块的标题走它自带的 zh_CN 翻译（“定理”“命题”“推论”），
``{prf:proof}`` 却把英文的 “Proof. ” 直接拼进正文的第一段（sphinx-proof 0.4.0 的
``ProofDirective.run``，没有经过翻译）。这里在读完每篇文档之后把它换成加粗的“证明”。
tests/book/test_book_objects.py 检查网页上出现“证明”而不出现 “Proof.”。
"""

from docutils import nodes
from sphinx_proof.nodes import proof_node

ENGLISH = "Proof. "


def translate_proof_title(app, doctree) -> None:
    for proof in doctree.findall(proof_node):
        paragraph = next(proof.findall(nodes.paragraph), None)
        if paragraph is None:
            continue
        first = next(paragraph.findall(nodes.Text), None)
        if first is None or not first.astext().startswith(ENGLISH):
            continue
        rest = first.astext()[len(ENGLISH) :]
        parent = first.parent
        index = parent.index(first)
        parent.remove(first)
        parent.insert(index, nodes.Text(rest))
        paragraph.insert(0, nodes.Text("　"))
        paragraph.insert(0, nodes.strong("证明", "证明"))


def setup(app):
    app.connect("doctree-read", translate_proof_title)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
