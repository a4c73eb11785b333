#!/usr/bin/env python3
"""Regenerates data/jinja_cases.json: template snippets rendered by Python's
jinja2 set up like transformers (ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols, transformers' tojson, raise_exception,
strftime_now fixed at 2026-01-02 03:04:05). The C++ tests check that
oscar's engine renders every case byte-identically (or fails with the same
exception class). Run: python3 tests/chat/gen_jinja_cases.py
"""
import json, os, sys
from datetime import datetime
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.exceptions import TemplateError

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

def raise_exception(message):
    raise TemplateError(message)

def strftime_now(fmt):
    return datetime(2026, 1, 2, 3, 4, 5).strftime(fmt)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now

CTX = {
    "s": "Hello, World", "e": "", "n": None, "i": 7, "neg": -3, "f": 2.5, "t": True, "fa": False,
    "l": [3, 1, 2], "words": ["b", "A", "c", "a"], "el": [],
    "d": {"b": 2, "a": 1, "C": 3}, "ed": {},
    "users": [{"name": "bob", "age": 30, "admin": True}, {"name": "Al", "age": 25, "admin": False},
              {"name": "cy", "age": 35}],
    "nested": {"x": {"y": [10, 20, {"z": "deep"}]}},
    "msgs": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
             {"role": "assistant", "content": "<think>r</think>\n\nans"}],
    "u8": "Übersetze: 你好 👋", "multi": "line1\nline2\n\nline4",
}

CASES = [
    # ---- output, literals, whitespace ----
    ("text_only", "plain text"),
    ("trailing_newline_dropped", "a\n"),
    ("two_trailing_newlines", "a\n\n"),
    ("print_none", "{{ n }}|{{ t }}|{{ fa }}|{{ i }}|{{ f }}"),
    ("print_list_dict_repr", "{{ l }} {{ d }} {{ ['a', \"it's\", none, true, 1.0] }} {{ (1,) }} {{ (1, 'x') }}"),
    ("print_tuple_expr", "{{ 1, 2 }}"),
    ("string_escapes", "{{ 'a\\tb\\\\c\\'d' }}|{{ \"q\\\"\" }}|{{ '\\u00e9\\x41' }}"),
    ("repr_escapes", "{{ ['a\\nb', 'tab\\t', '\\x01', 'é', '\\u200b'] }}"),
    ("float_repr", "{{ 1e16 }} {{ 1.5e-5 }} {{ 1e15 }} {{ 0.1 + 0.2 }} {{ 1/3 }} {{ 100.0 }} {{ -0.0 }} {{ 2.5e-4 }}"),
    ("adjacent_strings", "{{ 'a' 'b' \"c\" }}"),
    ("ws_dash_both", "a  {%- if true -%}  b  {%- endif -%}  c"),
    ("ws_trim_blocks", "{% if true %}\nx\n{% endif %}\ny"),
    ("ws_lstrip_blocks", "  {% if true %}\n  x\n  {% endif %}\nz"),
    ("ws_lstrip_not_var", "  {{ 'v' }}\n  {% if true %}w{% endif %}"),
    ("ws_plus_disables_lstrip", "  {%+ if true %}x{% endif %}"),
    ("ws_plus_disables_trim", "{% if true +%}\nx{% endif %}"),
    ("ws_var_dash", "a \n {{- 'b' -}} \n c"),
    ("ws_comment", "a\n  {# comment #}\nb {#- c -#} d"),
    ("ws_inline_after_text", "x {% if true %}y{% endif %} z"),
    ("ws_mixed_lines", "{% for x in l %}\n  {{ x }}\n{% endfor %}\n"),
    ("ws_mixed_dash_lines", "{%- for x in l -%}\n  {{ x }}\n{%- endfor %}"),
    ("raw_block", "{% raw %}{{ not evaluated }} {% if %}{% endraw %}"),
    ("raw_block_ws", "a {%- raw -%}  {{x}}  {%- endraw -%} b"),
    ("crlf_source", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc"),
    # ---- if ----
    ("if_elif_else", "{% for v in [1, 2, 3] %}{% if v == 1 %}one{% elif v == 2 %}two{% else %}other{% endif %},{% endfor %}"),
    ("if_undefined", "{% if nope %}y{% else %}n{% endif %}"),
    ("if_none_vs_empty", "{% if n %}a{% endif %}{% if e %}b{% endif %}{% if n is none %}c{% endif %}{% if e is none %}d{% endif %}{% if e == '' %}e{% endif %}"),
    ("if_set_leaks", "{% if true %}{% set z = 4 %}{% endif %}{{ z }}"),
    # ---- for ----
    ("for_loop_vars", "{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
    ("for_prev_next", "{% for x in l %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}"),
    ("for_else", "{% for x in el %}x{% else %}empty{% endfor %}"),
    ("for_dict_keys", "{% for k in d %}{{ k }}{% endfor %}"),
    ("for_dict_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}"),
    ("for_items_filter", "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}"),
    ("for_string", "{% for c in 'héj' %}[{{ c }}]{% endfor %}"),
    ("for_filter_if", "{% for x in range(10) if x is odd %}{{ x }}/{{ loop.length }} {% endfor %}"),
    ("for_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
    ("for_nested_loop", "{% for a in [1,2] %}{% for b in 'xy' %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}"),
    ("for_scope_per_iteration", "{% for i in range(3) %}{% if i == 1 %}{% set x = 5 %}{% endif %}{{ x }}|{% endfor %}"),
    ("for_scope_no_leak", "{% set x = 1 %}{% for i in [1] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}"),
    ("for_cycle", "{% for x in l %}{{ loop.cycle('odd', 'even') }} {% endfor %}"),
    ("for_changed", "{% for x in [1,1,2,2,1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}"),
    ("for_undefined_iter", "{% for x in nope %}x{% else %}none{% endfor %}"),
    ("for_unpack_tuples", "{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }} {% endfor %}"),
    ("for_recursive", "{% for item in [{'n': 'a', 'c': [{'n': 'b', 'c': []}]}] recursive %}{{ item.n }}{{ loop.depth }}({{ loop(item.c) }}){% endfor %}"),
    ("for_reverse_slice", "{% for m in msgs[::-1] %}{{ m.role }} {% endfor %}"),
    # ---- set / namespace / with ----
    ("set_basic", "{% set a = 1 %}{% set b, c = 2, 3 %}{{ a }}{{ b }}{{ c }}"),
    ("set_block", "{% set x %}inner {{ i }}{% endset %}[{{ x }}]"),
    ("set_block_filter", "{% set x | upper | trim %}  inner  {% endset %}[{{ x }}]"),
    ("namespace_loop", "{% set ns = namespace(count=0, found=false) %}{% for x in l %}{% set ns.count = ns.count + x %}{% endfor %}{{ ns.count }} {{ ns.found }}"),
    ("namespace_dict_arg", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns.c }}|"),
    ("set_attr_non_namespace", "{% set d.x = 1 %}"),
    ("with_block", "{% with a = 5, b = 6 %}{{ a * b }}{% endwith %}{{ a }}|"),
    # ---- macros / call ----
    ("macro_basic", "{% macro greet(name, greeting='Hi') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Bob') }} {{ greet('Al', greeting='Yo') }} {{ greet(name='Cy') }}"),
    ("macro_missing_arg", "{% macro m(a, b) %}[{{ a }}|{{ b }}]{% endmacro %}{{ m(1) }}"),
    ("macro_too_many_args", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}"),
    ("macro_unknown_kwarg", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, b=2) }}"),
    ("macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, x=4) }}"),
    ("macro_nested", "{% macro outer(x) %}{% macro inner(y) %}<{{ y }}>{% endmacro %}{{ inner(x) }}{{ inner(x ~ x) }}{% endmacro %}{{ outer('a') }}"),
    ("macro_recursive", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}"),
    ("macro_sees_later_global", "{% macro m() %}{{ y }}{% endmacro %}{% set y = 3 %}{{ m() }}"),
    ("macro_default_refers_arg", "{% macro m(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ m(4) }}"),
    ("macro_returns_string", "{% macro m() %} x {% endmacro %}[{{ m()|trim }}]{{ m() is string }}"),
    ("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ i }}{% endcall %}"),
    ("call_block_args", "{% macro each(items) %}{% for x in items %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) each([1, 2]) %}[{{ v }}]{% endcall %}"),
    ("filter_block", "{% filter upper %}shout {{ s }}{% endfilter %}"),
    # ---- expressions ----
    ("arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}"),
    ("arith_bool", "{{ true + 1 }} {{ true * 3 }} {{ 1 == 1.0 }} {{ true == 1 }}"),
    ("precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ not 1 == 2 }} {{ 1 ~ 2 * 3 }} {{ 'a' ~ 'b' | upper }}"),
    ("precedence_concat_binds_tighter_than_plus", "{{ 1 ~ 2 + 3 }}"),
    ("precedence_filter_before_plus", "{{ 'a' + ['x']|join + 'b' }} {{ -3|abs }} {{ not n is none }}"),
    ("concat_tilde", "{{ 'a' ~ 1 ~ none ~ nope ~ [1] }}"),
    ("string_plus_list", "{{ 'a' + l }}"),
    ("list_plus_str", "{{ l + 'a' }}"),
    ("int_plus_str", "{{ 1 + 'a' }}"),
    ("string_mul", "{{ 'ab' * 3 }}{{ 2 * 'x' }}{{ [1] * 2 }}"),
    ("div_zero", "{{ 1 / 0 }}"),
    ("compare_chain", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 2 >= 2.0 }}"),
    ("compare_mixed_types", "{{ 1 < 'a' }}"),
    ("in_operator", "{{ 'ell' in s }} {{ 2 in l }} {{ 'a' in d }} {{ 'z' not in d }} {{ 'x' in nope }}"),
    ("and_or_values", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ e or n }} {{ nope or 'dflt' }} {{ l and d }}"),
    ("cond_expr", "{{ 'y' if t else 'n' }} {{ 'y' if fa }}| {{ 'a' if fa else 'b' if t else 'c' }}"),
    ("subscript_and_attr", "{{ nested.x.y[2].z }} {{ nested['x']['y'][-1]['z'] }} {{ l[0] }} {{ l[-1] }} {{ s[0] }} {{ u8[0] }} {{ u8[-1] }}"),
    ("slices", "{{ l[1:] }} {{ l[:-1] }} {{ l[::2] }} {{ l[::-1] }} {{ s[7:] }} {{ s[::-1] }} {{ u8[-4:] }} {{ l[5:] }} {{ l[-10:1] }}"),
    ("dict_and_list_literals", "{{ {'a': [1, 2], 'b': {'c': none}} }} {{ [] }} {{ {} }} {{ [1, 2,] }}"),
    ("dot_integer_index", "{{ l.0 }} {{ nested.x.y.1 }}"),
    ("undefined_print", "[{{ nope }}]"),
    ("undefined_attr_of_undefined", "{{ nope.attr }}"),
    ("undefined_attr_of_dict", "[{{ d.nope }}]"),
    ("undefined_attr_chain", "{{ d.nope.deeper }}"),
    ("undefined_item_of_list", "[{{ l[10] }}]"),
    ("undefined_call", "{{ nope() }}"),
    ("undefined_plus", "{{ nope + 1 }}"),
    ("undefined_compare_eq", "{{ nope == nope }} {{ nope == none }} {{ nope != 1 }}"),
    ("undefined_is_tests", "{{ nope is defined }} {{ nope is undefined }} {{ d.zz is defined }} {{ nope is none }}"),
    ("dict_attr_vs_item", "{{ {'items': 1}['items'] }} {{ {'x': 1}.x }} {{ {'get': 5}.get('get') }}"),
    ("method_on_list_missing", "{{ l.startswith('a') }}"),
    ("none_attr", "[{{ n.foo }}]"),
    ("unsafe_attribute", "[{{ s.__class__ }}]"),
    ("mutating_method_blocked", "{{ l.append(4) }}"),
    ("dict_update_blocked", "{{ d.update({'z': 1}) }}"),
    # ---- string methods ----
    ("str_startswith_endswith", "{{ s.startswith('Hell') }} {{ s.endswith('ld') }} {{ s.startswith(('x', 'H')) }} {{ s.startswith('W', 7) }}"),
    ("str_split", "{{ 'a,b,,c'.split(',') }} {{ '  a  b  '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ' x '.split(' ') }}"),
    ("str_strip", "[{{ '  x  '.strip() }}][{{ 'xxhixx'.strip('x') }}][{{ '\\n\\na\\n'.lstrip('\\n') }}][{{ 'ab  '.rstrip() }}]"),
    ("str_case", "{{ s.upper() }} {{ s.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'Straße'.upper() }} {{ 'ÀÉÎ'.lower() }}"),
    ("str_replace_find", "{{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 2) }} {{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('zz') }} {{ s.count('l') }} {{ u8.find('你') }}"),
    ("str_format", "{{ '{} and {}'.format(1, 'b') }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{name}!'.format(name='x') }} {{ '{:>5}|{:<4}|{:^6}'.format('r', 'l', 'c') }} {{ '{:.2f} {:05d} {!r}'.format(3.14159, 42, 'q') }}"),
    ("str_percent", "{{ '%s-%d-%.2f-%r' % ('a', 3, 1.5, 'q') }} {{ '%5s|%-5s|' % ('r', 'l') }} {{ '%(a)s' % {'a': 1} }} {{ '%x %o %%' % (255, 8) }}"),
    ("str_join_method", "{{ ', '.join(['a', 'b']) }} {{ '-'.join('abc') }}"),
    ("str_misc", "{{ 'abc'.isalpha() }} {{ '123'.isdigit() }} {{ '  '.isspace() }} {{ 'ABC'.isupper() }} {{ 'a1'.isalnum() }} {{ 'x'.center(5) }}| {{ '7'.zfill(3) }} {{ 'a\\nb'.splitlines() }}"),
    ("dict_methods", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 9) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}"),
    ("list_methods", "{{ l.index(1) }} {{ l.count(3) }}"),
    # ---- filters ----
    ("f_tojson", "{{ d|tojson }} {{ l|tojson }} {{ 'é\"\\n'|tojson }} {{ n|tojson }} {{ t|tojson }} {{ 2.0|tojson }} {{ users[0]|tojson }}"),
    ("f_tojson_indent", "{{ {'a': [1, {'b': none}], 'c': {}}|tojson(indent=2) }}"),
    ("f_tojson_sort_keys", "{{ d|tojson(sort_keys=true) }}"),
    ("f_tojson_separators", "{{ d|tojson(separators=(',', ':')) }}"),
    ("f_tojson_ensure_ascii_positional", "{{ u8|tojson(true) }}"),
    ("f_tojson_undefined", "{{ nope|tojson }}"),
    ("f_dictsort", "{{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(by='value', reverse=true) }}"),
    ("f_items_keys_values", "{{ d|items|list }} {{ nope|items|list }}"),
    ("f_trim_upper_lower", "[{{ '  a b '|trim }}][{{ 'xax'|trim('x') }}] {{ s|upper }} {{ s|lower }} {{ n|upper }}"),
    ("f_capitalize_title", "{{ 'hello WORLD'|capitalize }} {{ 'hello-world (foo) [bar]'|title }} {{ \"they're bill's\"|title }}"),
    ("f_replace", "{{ s|replace('o', '0') }} {{ s|replace('o', '0', 1) }}"),
    ("f_join", "{{ l|join(',') }} {{ users|join('/', attribute='name') }} {{ [1, none, 'x']|join }}"),
    ("f_length_count", "{{ l|length }} {{ s|length }} {{ u8|length }} {{ d|count }} {{ nope|length }} {{ el|length }}"),
    ("f_first_last", "{{ l|first }} {{ l|last }} {{ s|first }} {{ d|first }} [{{ el|first }}]"),
    ("f_default", "{{ nope|default('dflt') }} {{ n|default('dflt') }} {{ e|default('dflt') }} {{ e|default('dflt', true) }} {{ nope|d('x') }}"),
    ("f_string_int_float", "{{ 12|string }} {{ '42'|int }} {{ '3.7'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ 3.9|int }} {{ '1e3'|float }} {{ 'x'|float }} {{ n|int }} {{ ' 12 '|int }} {{ '0x1A'|int(0, 16) }}"),
    ("f_abs_round", "{{ -3|abs }} {{ -2.5|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} {{ 7|round }}"),
    ("f_list", "{{ 'abc'|list }} {{ d|list }} {{ nope|list }}"),
    ("f_map", "{{ users|map(attribute='name')|list }} {{ l|map('string')|list }} {{ words|map('upper')|join }} {{ users|map(attribute='admin', default='?')|list }}"),
    ("f_select_reject", "{{ range(10)|select('odd')|list }} {{ range(6)|reject('even')|list }} {{ [0, 1, '', 'a', none]|select|list }} {{ l|select('greaterthan', 1)|list }} {{ words|reject('equalto', 'a')|list }}"),
    ("f_selectattr", "{{ users|selectattr('admin')|map(attribute='name')|list }} {{ users|rejectattr('admin')|map(attribute='name')|list }} {{ users|selectattr('age', 'gt', 26)|map(attribute='name')|join(',') }} {{ users|selectattr('admin', 'defined')|list|length }}"),
    ("f_sort", "{{ l|sort }} {{ words|sort }} {{ words|sort(case_sensitive=true) }} {{ words|sort(reverse=true) }} {{ users|sort(attribute='age')|map(attribute='name')|list }}"),
    ("f_unique", "{{ ['a', 'A', 'b', 'a']|unique|list }} {{ ['a', 'A', 'b']|unique(case_sensitive=true)|list }}"),
    ("f_reverse", "{{ s|reverse }} {{ l|reverse|list }}"),
    ("f_min_max_sum", "{{ l|min }} {{ l|max }} {{ words|max }} {{ l|sum }} {{ users|sum(attribute='age') }} {{ users|max(attribute='age')|attr('get') is defined }}"),
    ("f_batch_slice", "{{ range(7)|batch(3)|list }} {{ range(7)|batch(3, 'x')|list }} {{ range(7)|slice(3)|list }}"),
    ("f_indent", "{{ multi|indent }}|{{ multi|indent(2, true) }}|{{ multi|indent(2, blank=true) }}|{{ 'a\\nb'|indent('> ') }}"),
    ("f_escape_safe", "{{ '<a href=\"x\">&\\'</a>'|escape }} {{ '<b>'|safe }} {{ '<i>'|e }}"),
    ("f_center_truncate_wordcount", "[{{ 'ab'|center(7) }}] {{ 'the quick brown fox jumps'|truncate(15) }} {{ 'the quick brown fox jumps'|truncate(15, true) }} {{ 'a b  c'|wordcount }}"),
    ("f_format", "{{ '%s=%d'|format('x', 3) }} {{ '%(a)s'|format(a='kw') }}"),
    ("f_attr", "{{ users[0]|attr('name') }}|{{ l|attr('count')(3) }}"),
    ("f_chain", "{{ users|map(attribute='name')|map('upper')|sort|join(', ') }}"),
    ("f_unknown", "{{ s|nosuchfilter }}"),
    ("f_in_unexecuted_branch", "{% if false %}{{ s|nosuchfilter }}{% endif %}ok"),
    # ---- tests ----
    ("t_types", "{{ s is string }} {{ i is number }} {{ f is number }} {{ t is number }} {{ i is integer }} {{ t is integer }} {{ f is float }} {{ l is sequence }} {{ d is sequence }} {{ s is sequence }} {{ i is sequence }} {{ d is mapping }} {{ l is mapping }} {{ l is iterable }} {{ i is iterable }}"),
    ("t_bool_none", "{{ t is true }} {{ 1 is true }} {{ fa is false }} {{ 0 is false }} {{ t is boolean }} {{ n is none }} {{ e is none }} {{ n is not none }}"),
    ("t_numbers", "{{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }}"),
    ("t_compare", "{{ 3 is eq 3 }} {{ 3 is equalto 4 }} {{ 3 is ne 4 }} {{ 3 is lt 4 }} {{ 3 is gt 4 }} {{ 3 is ge 3 }} {{ 3 is le 2 }} {{ 2 is in l }} {{ 'x' is in s }}"),
    ("t_case", "{{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'aBc' is lower }}"),
    ("t_sameas_callable", "{{ n is sameas none }} {{ t is sameas true }} {{ l is sameas l }} {{ range is callable }} {{ s is callable }} {{ 'upper' is filter }} {{ 'odd' is test }} {{ 'nope' is filter }}"),
    ("t_undefined_sequence_iterable", "{{ nope is sequence }} {{ nope is iterable }} {{ nope is mapping }} {{ nope is string }}"),
    ("t_unknown", "{{ s is nosuchtest }}"),
    ("t_not_precedence", "{{ not nope is defined }} {{ not t and fa }} {{ not (t and fa) }}"),
    # ---- globals ----
    ("g_range", "{{ range(5)|list }} {{ range(2, 5)|list }} {{ range(10, 0, -3)|list }} {{ range(0)|list }}"),
    ("g_range_too_big", "{{ range(200000)|length }}"),
    ("g_dict", "{{ dict(a=1, b=2) }} {{ dict([('x', 1)]) }}"),
    ("g_raise_exception", "{{ raise_exception('custom failure') }}"),
    ("g_strftime_now", "{{ strftime_now('%Y-%m-%d %H:%M:%S') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%A %j') }}"),
    ("g_joiner", "{% set j = joiner(', ') %}{% for x in l %}{{ j() }}{{ x }}{% endfor %}"),
    # ---- syntax errors ----
    ("syntax_unclosed_if", "{% if true %}x"),
    ("syntax_unclosed_var", "{{ x "),
    ("syntax_unknown_tag", "{% frobnicate %}"),
    ("syntax_endfor_without_for", "{% endfor %}"),
    ("syntax_bad_expr", "{{ 1 + }}"),
    ("syntax_unclosed_string", "{{ 'abc }}"),
    ("syntax_unclosed_comment", "{# abc"),
    ("syntax_break_outside_loop", "{% break %}"),
    ("syntax_unbalanced_paren", "{{ (1 + 2 }}"),
    ("syntax_chained_is", "{{ 1 is number is number }}"),
]

def main():
    out = []
    for name, tmpl in CASES:
        entry = {"name": name, "template": tmpl}
        try:
            entry["expected"] = env.from_string(tmpl).render(**CTX)
        except Exception as e:  # noqa: BLE001 - we record every failure class
            entry["error"] = type(e).__name__
            entry["message"] = str(e)
        out.append(entry)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "jinja_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"context": CTX, "cases": out}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(out)} cases to {path}")

if __name__ == "__main__":
    sys.exit(main())
