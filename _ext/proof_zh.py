"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：证明块与解答块的标题用中文。

sphinx-proof 的 ``{prf:theorem}`` 等块的标题走它自带的 zh_CN 翻译（“定理”“命题”“推论”），
``{prf:proof}`` 却把英文的 “Proof. ” 直接拼进正文的第一段（sphinx-proof 0.4.0 的
``ProofDirective.run``，没有经过翻译）。这里在读完每篇文档之后把它换成加粗的“证明”。

sphinx-exercise 的解答块标题按英文语序拼成“Solution to Exercise 1.1”，译成中文就是“解答 练习 1.1”
（``post_transforms.resolve_solution_title``：先放“解答”，再放指向练习的链接）。中文的语序是
“练习 1.1 解答”：在它的后处理（优先级 21、22）之后，把链接挪到前面、“解答”放到后面。

tests/book/test_book_objects.py 检查网页上出现“证明”而不出现 “Proof.”，以及每个解答的标题都是“练习 N.M 解答”。
"""

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import solution_node
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
        first.parent.replace(first, nodes.Text(first.astext()[len(ENGLISH) :]))
        paragraph.insert(0, nodes.Text("　"))
        paragraph.insert(0, nodes.strong("证明", "证明"))


class SolutionTitleWordOrder(SphinxPostTransform):
    """“解答 练习 1.1” → “练习 1.1 解答”：标题节点里 [文字“解答”, 链接“ 练习 1.1”] 换成 [链接“练习 1.1”, 文字“ 解答”]。"""

    default_priority = 23  # sphinx-exercise 在 21 拼好标题、22 解析指向解答的链接文字

    def run(self, **kwargs) -> None:
        for solution in self.document.findall(solution_node):
            title = solution.children[0] if solution.children else None
            if not isinstance(title, nodes.title) or len(title.children) != 2:
                continue
            word, link = title.children
            if not isinstance(word, nodes.Text) or not isinstance(link, nodes.reference):
                continue
            label = link.astext().strip()
            link.children = []
            link += nodes.Text(label)
            title.children = []
            title += link
            title += nodes.Text(f" {word.astext()}")
            solution["title"] = f"{label} {word.astext()}"


def setup(app):
    app.connect("doctree-read", translate_proof_title)
    app.add_post_transform(SolutionTitleWordOrder)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
