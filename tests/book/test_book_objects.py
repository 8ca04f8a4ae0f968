"""Jupyter Book 的对象在构建好的网站上真的出现，而且用中文：定理/证明（sphinx-proof）、练习/解答
（sphinx-exercise，解答默认折叠）、带编号的公式，编号按章（_toc.yml 的正文部分由 Sphinx 编号，见
_ext/chapter_numbers.py）。"""

import re

from bs4 import BeautifulSoup

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


def test_every_chapter_opens_with_learning_goals(site):
    """学习目标是正文的第一个二级标题，不占节号（否则后面每一节的号都差一），下面 3–5 条；小结、练习在最后，也不编号。"""
    for prefix in CHAPTERS:
        article = BeautifulSoup(page(site, prefix), "html.parser").select_one("article")
        headings = article.find_all("h2")
        titles = [h.get_text().replace("#", "").strip() for h in headings]
        assert titles[0] == "学习目标", f"{prefix}: the goals come first, got {titles[:2]}"
        assert titles[-2:] == ["小结", "练习"], prefix  # 不编号：test_numbering.py
        goals = headings[0].find_next("ul")
        assert 3 <= len(goals.find_all("li", recursive=False)) <= 5, prefix


def test_every_exercise_has_one_folded_solution_titled_in_chinese_word_order(site):
    """练习按章编号，每章至少 3 道；_ext/proof_zh.py 把 sphinx-exercise 的“解答 练习 1.1”排成中文语序
    “练习 1.1 解答”，链接指向那道练习；每道练习恰好一个解答（同一个标签下两个解答会在网页上出现两个
    “练习 N.M 解答”），默认折叠。"""
    for prefix in CHAPTERS:
        html = page(site, prefix)
        article = BeautifulSoup(html, "html.parser").select_one("article")
        exercises = caption_numbers(str(article), "练习")
        assert exercises == [f"{int(prefix[2:])}.{n}" for n in range(1, len(exercises) + 1)]
        assert len(exercises) >= 3, prefix
        titles = article.select(".solution.dropdown > .admonition-title")
        texts = [" ".join(title.get_text().split()) for title in titles]
        assert texts == [f"练习 {number} 解答" for number in exercises], prefix
        assert "Click to" not in html, f"{prefix}: toggle hints are Chinese"
        for title, number in zip(titles, exercises, strict=True):
            link = title.find("a")
            assert link.get_text().strip() == f"练习 {number}", prefix
            target = article.find(id=link["href"].removeprefix("#"))
            assert target is not None and "exercise" in target.get("class", []), (prefix, number)
