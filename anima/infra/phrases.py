"""The sentences anima says in her voice, in each language: anima/data/phrases/LANG.toml.

The rules backend narrates with them (internalize, consolidate), the autobiography and a
forgotten line are told with them. A phrase is a string with {name}s the code fills in, or
a list or table of such strings; a language without a phrase file is told in English.
"""

import functools

LANGS = ("en", "zh")


@functools.cache
def of(lang: str) -> dict:
    import tomllib

    name = lang if lang in LANGS else "en"
    from anima.infra.text import data

    return tomllib.loads(data(f"phrases/{name}.toml"))


def word(lang: str, section: str, key: str):
    """A phrase as it stands (a string, a list or a table)."""
    return of(lang)[section][key]


def say(lang: str, section: str, key: str, **values) -> str:
    return word(lang, section, key).format(**values)


def counted(lang: str, section: str, key: str, n: int, **values) -> str:
    """A phrase that has a form for one and one for more (`{"one", "many"}`), for `n`."""
    return word(lang, section, key)["one" if n == 1 else "many"].format(n=n, **values)


def listing(lang: str, items: list[str], most: int, more: str = "more") -> str:
    """`items` as the language lists them ("a", "a and b", "a, b and c"); past `most` of
    them, the first `most` and how many more (`more`: "more" things, or "others", people)."""
    if not items:
        return ""
    shown, rest = items[:most], len(items) - most
    comma = word(lang, "lists", "comma")
    if rest > 0:
        phrase = word(lang, "lists", more)
        if isinstance(phrase, dict):
            phrase = phrase["one" if rest == 1 else "many"]
        return phrase.format(shown=comma.join(shown), rest=rest, n=len(items))
    if len(shown) == 1:
        return shown[0]
    return say(lang, "lists", "pair", first=comma.join(shown[:-1]), last=shown[-1])
