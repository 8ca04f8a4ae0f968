"""Jupyter Book 的对象在构建好的网站上真的出现，而且用中文：定理/证明（sphinx-proof）、练习/解答
（sphinx-exercise，解答默认折叠）、带编号的公式，编号按章（_ext/chapter_numbers.py）。"""

import re

CHAPTERS = [f"ch0{n}" for n in range(1, 9)]


def page(site, prefix: str) -> str:
    (path,) = (site / "chapters").glob(f"{prefix}_*.html")
    return path.read_text("utf-8")


def caption_numbers(html: str, kind: str) -> list[str]:
    return re.findall(rf'caption-number">{kind} ([\d.]+) <', html)


def test_chapter_4_states_theorems_with_chinese_titles_and_proofs(site):
    html = page(site, "ch04")
    assert caption_numbers(html, "定理") == ["4.1", "4.2"]
    assert caption_numbers(html, "命题") == ["4.1"]
    assert caption_numbers(html, "推论") == ["4.1"]
    # _ext/proof_zh.py 把 sphinx-proof 拼进正文的英文 “Proof. ” 换成“证明”
    assert html.count("<strong>证明</strong>") == 4
    assert "Proof." not in html


def test_equations_are_numbered_per_chapter_and_referenced(site):
    html = page(site, "ch04")
    assert re.findall(r'class="eqno">\(([\d.]+)\)', html) == ["4.1", "4.2", "4.3", "4.4"]
    assert 'href="#equation-eq-shift"' in html  # {eq}`eq-shift` 是指向公式的链接


def test_every_chapter_has_exercises_numbered_per_chapter_with_folded_solutions(site):
    for prefix in CHAPTERS:
        html = page(site, prefix)
        numbers = caption_numbers(html, "练习")
        chapter = str(int(prefix[2:]))
        assert numbers == [f"{chapter}.{n}" for n in range(1, len(numbers) + 1)], prefix
        assert len(numbers) >= 3, prefix
        solutions = re.findall(r'class="solution dropdown admonition"', html)
        assert len(solutions) >= len(numbers), f"{prefix}: every exercise has a folded solution"
        assert "Click to" not in html, f"{prefix}: toggle hints are Chinese"


def test_every_chapter_opens_with_learning_goals(site):
    for prefix in CHAPTERS:
        html = page(site, prefix)
        goals = html.index("<h2>学习目标")
        headings = [h.strip() for h in re.findall(r"<h2>([^<]+)<", html) if h.strip() != "目录"]
        assert headings[0] == "学习目标", f"{prefix}: the goals come first, got {headings[:2]}"
        assert {"小结", "练习"} <= set(headings), prefix
        items = re.findall(r"<li><p>", html[goals : html.index("</ul>", goals)])
        assert 3 <= len(items) <= 5, prefix
