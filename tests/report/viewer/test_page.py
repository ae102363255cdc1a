"""The viewer's HTML: text from the data stays text; the page in a notebook."""

from __future__ import annotations

import pytest

import headstats as hs
from headstats.inputs.records import Record
from headstats.report.viewer.page import AttentionView, safe_json, viewer_page
from headstats.report.viewer.payload import viewer_data
from headstats.study.viewing import view_inputs
from report.viewer.helpers import chromium, dump_dom, page_data


def test_text_from_the_data_cannot_break_out_of_the_page(tiny_model, tmp_path):
    evil = "</script><script>alert(1)</script><!-- & -->"
    inputs = view_inputs(tiny_model, [Record("x", f"Look: {evil}")])
    inputs[0].tokens[1] = evil  # a piece holding the worst text, as a tokenizer could write it
    html = viewer_page(viewer_data(inputs, model="tiny"), title=f"view of {evil}")
    assert html.count("</script>") == 2 and html.count("<script") == 2  # the data's and the viewer's own
    assert "<!--" not in html
    assert page_data(html)["inputs"][0]["tokens"][1] == evil
    assert safe_json({"a": "<&>"}) == '{"a":"\\u003c\\u0026\\u003e"}'
    if chromium() is not None:
        page = tmp_path / "evil.html"
        page.write_text(html, encoding="utf-8")
        dom = dump_dom(page, "#mode=head&layer=0&heads=0,1")
        assert dom.count("<script") == 2  # the browser made no element of the text: it stays text
        assert "&lt;/script&gt;&lt;script&gt;alert(1)" in dom  # drawn as text in the head view


def test_hs_view_shows_in_a_notebook_as_an_iframe_of_the_page(tiny_model):
    view = hs.view(tiny_model, "The cat sat on the mat.")
    assert isinstance(view, AttentionView) and "1 input(s) of 9 pieces" in repr(view)
    shown = view._repr_html_()
    assert shown.startswith("<iframe srcdoc='") and "<script" not in shown  # the page, as an escaped attribute
    assert "&lt;script" in shown and "sandbox='allow-scripts allow-downloads'" in shown


def test_a_long_input_shows_a_window_of_rows_and_the_view_lives_in_the_address(tiny_model, tmp_path):
    import re

    view = hs.view(tiny_model, " ".join(["word"] * 150))
    n = len(view.data["inputs"][0]["tokens"])
    # cut at the model's maximum (256 pieces: 2 bytes per position in the drawing data), and said so
    assert n == tiny_model.max_input_length == 256 and view.data["inputs"][0]["truncated"]
    assert view.data["inputs"][0]["label"].endswith("(truncated)") and view.data["inputs"][0]["width"] == 2
    if chromium() is None:
        pytest.skip("needs Chromium to run the page's script (apt-get install chromium)")
    page = view.save(tmp_path / "long.html")
    dom = dump_dom(page, "#mode=head&layer=1&heads=0,1&row0=10&rows=20")
    queries = re.findall(r'<text [^>]*text-anchor="end"[^>]*opacity="([\d.]+)"', dom)
    assert len(queries) == n and queries.count("1") == 20  # every piece listed, rows 10..29 drawn
    state = re.search(r'data-state="([^"]+)"', dom).group(1).replace("&amp;", "&")
    assert "mode=head" in state and "heads=0%2C1" in state and "row0=10" in state and "rows=20" in state
    dom = dump_dom(page, "#mode=matrix&layer=0&heads=1&row0=100&rows=5")
    rows = re.findall(r'<text [^>]*text-anchor="end"', dom)
    assert len(rows) == 5  # the matrix draws the window's rows only


#: Clicks "save SVG" and "save PNG" once the view is drawn, and writes what each download would save on <body>.
DOWNLOADS = """<script>(function go(){const r=document.querySelector('.hs-viewer');
if(r.dataset.ready!=='1')return setTimeout(go,50);
HTMLAnchorElement.prototype.click=function(){const name=this.download;fetch(this.href).then(x=>x.blob()).then(
 b=>b.text().then(t=>{const e=document.createElement('pre');e.className='got';e.dataset.name=name;e.dataset.type=b.type;
 e.dataset.size=b.size;e.textContent=b.type==='image/svg+xml'?t:'';document.body.appendChild(e);}));};
r.querySelector('.hs-svg').click();r.querySelector('.hs-png').click();})()</script>"""


def test_save_svg_and_png_save_the_view_as_drawn(tiny_model, tmp_path):
    import html as markup
    import re
    import xml.etree.ElementTree as ET

    if chromium() is None:
        pytest.skip("needs Chromium to run the page's script (apt-get install chromium)")
    page = tmp_path / "saved.html"
    page.write_text(hs.view(tiny_model, "The cat sat.").html.replace("</body>", DOWNLOADS + "</body>"),
                    encoding="utf-8")
    dom = dump_dom(page, "#mode=head&layer=1&heads=0,1")
    got = {m[0]: (m[1], int(m[2]), m[3]) for m in re.findall(
        r'<pre class="got" data-name="([^"]+)" data-type="([^"]+)" data-size="(\d+)">(.*?)</pre>', dom, re.S)}
    assert set(got) == {"attention_0_head_1_0_1.svg", "attention_0_head_1_0_1.png"}
    kind, size, text = got["attention_0_head_1_0_1.svg"]
    svg = ET.fromstring(markup.unescape(text))  # a standalone SVG document
    assert kind == "image/svg+xml" and svg.tag == "{http://www.w3.org/2000/svg}svg"
    assert "heads 0, 1" in "".join(svg.itertext()) and "cat" in list(svg.itertext())
    kind, size, _ = got["attention_0_head_1_0_1.png"]
    assert kind == "image/png" and size > 5000  # drawn at twice the view's size
