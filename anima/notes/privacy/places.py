"""Street addresses, English (and European) and Chinese.

English: a house number, one to three words naming the street (not function words: "3 steps
down the road" is no address), and a street suffix; the suffixes that are everyday words too
(Drive, Court, Place, Way, Square, ...) only when capitalised, the others (street, st, avenue,
road, lane, boulevard, ...) in any case. An apartment, flat, suite or unit in front is taken
along. Also: a house number before a street word that comes first (12 rue de la Paix, 9 Calle
Mayor, 33 boulevard Haussmann), a German street and number (Hauptstraße 5), a British postcode
(LS6 2AB, SW1A 1AA), a post-office box, and any house number and name after "live(s) at" or
"address:". Loop, Park, Hill, Trail and the like are capitalised suffixes too (1 Infinite Loop).

Chinese: a road, street or lane word (路, 街, 大街, 大道, 街道, 巷, 胡同, 弄) and a number with its
unit (号, 弄, 栋, 单元, 室, 号楼, ...), in Arabic or Chinese numerals, a section (四段) allowed
between, more number-and-unit pairs after; the place name before it is taken along. A compound
or building word (小区, 花园, 公寓, 大厦, 园, 苑, 村, ...) and a building or unit number; a
building-and-unit number alone (5栋1单元1203); and a province or city, then a district or
county, then a road (上海市徐汇区漕溪北路), with or without a number, or a compound, park or town
(南山区科技园); building-unit-room with dashes after a compound or a district (北一区3-2-501), and
Japanese block numbers after a ward (渋谷区神南1-2-3); after 住在, 家在 or 地址是, a place with a
number in it (望京SOHO塔3) or a city and a district (深圳市福田区华强北). Words that end in a
road word but name no road (线路, 思路, 电路, 逛街, ...) are not roads.
"""

import re

from anima.notes.privacy.text import lazy

_STOP = (r"the|a|an|of|to|in|on|at|by|for|from|with|and|or|but|my|your|our|its|his|her|their|is|are|was|were|be"
         r"|been|more|less|than|this|that|these|those|some|many|few|all|any|each|every|other|another|next|last"
         r"|first|new|old|same|down|up|along|across|over|past|through|into|onto|off|via|per|about|around|near"
         r"|under|after|before|between|as|not|no|so|then|i|me|we|you|it|they|them|he|she")
_SUFFIX_ANY = (r"street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|parkway|pkwy|highway|hwy|crescent|alley"
               r"|plaza|broadway")
_SUFFIX_CAPITAL = (r"Drive|Dr|Court|Ct|Place|Pl|Way|Terrace|Ter|Square|Sq|Circle|Cir|Close|Row|Walk|Mews|Gardens|Grove"
                   r"|Loop|Parade|Crossing|Trail|Path|Hill|Heights|Rise|Quay|Wharf|Embankment|Park|Green|Causeway")
_NAME = rf"(?:(?!(?:{_STOP})\b)[A-Za-z][A-Za-z'’.-]*|\d+(?:st|nd|rd|th))"
_EN_ADDRESS = lazy(
    r"(?:\b(?:apt|apartment|suite|ste|unit|flat)\.?\s*#?[0-9A-Za-z-]+,?\s+)?"
    r"(?<![\w.,-])\d{1,5}[A-Za-z]?(?:-\d{1,5})?,?\s+"
    rf"(?:{_NAME}\s+){{1,3}}(?:(?:{_SUFFIX_ANY})|(?-i:{_SUFFIX_CAPITAL}))\b\.?"
    r"(?:\s+(?-i:NW|NE|SW|SE|N|S|E|W)\b\.?)?", re.I)
_EU_ADDRESS = lazy(
    r"(?<![\w.,-])\d{1,4}[a-z]?,?\s+(?:rue|avenue|av\.|boulevard|bd|calle|avenida|via|viale|piazza|rua|chemin"
    r"|allée|quai|place|plaza|strada|carrer|praça)\s+(?:(?:de|del|de la|des|du|di|da|la|le|les|do|dos)\s+)?"
    r"(?-i:[A-ZÀ-Ý][\w'’-]+)", re.I)
_SUFFIXES = frozenset(_SUFFIX_ANY.split("|"))
_CAPITAL_SUFFIXES = frozenset(_SUFFIX_CAPITAL.split("|"))
_EU_WORDS = frozenset(("rue", "avenue", "av", "boulevard", "bd", "calle", "avenida", "via", "viale", "piazza", "rua",
                       "chemin", "allée", "quai", "place", "plaza", "strada", "carrer", "praça"))
_DE_ENDINGS = ("straße", "strasse", "gasse", "weg", "platz", "allee", "ring", "damm")
_DE_ADDRESS = lazy(r"\b[A-ZÄÖÜ][a-zäöüß]+(?:straße|strasse|gasse|weg|platz|allee|ring|damm)\s+\d{1,4}[a-z]?\b")
_POSTCODE = lazy(r"(?<![A-Za-z0-9])[A-Z]{1,2}\d[A-Z\d]? \d[A-Z]{2}(?![A-Za-z0-9])")
# a post-office box is where the person's mail goes: an address whatever is around it
_PO_BOX = lazy(r"\b(?:p\.? ?o\.? ?box|post office box|postfach|apartado)\s*#?\s*\d{1,6}\b|(?:邮政)?信箱 ?\d{1,6}", re.I)
_LIVES_AT_HINTS = ("live at", "lives at", "lived at", "living at", "reside", "address:", "address,", "address is",
                   "address was")
_LIVES_AT = lazy(
    r"(?:\blive[sd]?\s+at|\bliving\s+at|\bresides?\s+at|\baddress(?:\s+is|\s+was)?\s*[:,]|\baddress\s+is)\s+"
    r"(?:(?:flat|apt|apartment|unit|suite)\s*\S+,?\s+)?(\d{1,5}[a-z]?,?\s+[A-Za-z][A-Za-z'’-]+(?:\s+[A-Za-z][a-z'’-]+)?)",
    re.I)

_ZH_NUM = r"(?:[0-9]{1,5}|[一二三四五六七八九十百零〇两]{1,6})"
_ZH_UNIT = r"(?:号楼|号院|单元|号|弄|栋|幢|室|楼|层|座)"
_ZH_ROAD = lazy(
    rf"(街道|大街|大道|胡同|路|街|巷|弄) ?(?:{_ZH_NUM}段 ?)?{_ZH_NUM} ?{_ZH_UNIT}"
    rf"(?: ?[0-9A-Za-z一二三四五六七八九十]{{1,5}} ?{_ZH_UNIT})*(?: ?[0-9]{{3,4}}(?![0-9]))?")
_ZH_COMPOUND = lazy(
    rf"(小区|花园|公寓|大厦|广场|家园|新村|社区|苑|园|村|区) ?{_ZH_NUM} ?(?:号楼|号院|栋|幢|单元|座|号)"
    rf"(?: ?[0-9A-Za-z一二三四五六七八九十]{{1,5}} ?{_ZH_UNIT})*(?: ?[0-9]{{3,4}}(?![0-9]))?")
_ZH_UNITS_ONLY = lazy(r"[0-9]{1,3} ?(?:栋|幢|号楼) ?[0-9]{1,2} ?单元(?: ?[0-9]{3,4}室?)?"
                      r"|[0-9]{1,2} ?单元 ?[0-9]{3,4}室")
# a province or city, a district or county, then a road: the gaps hold no function character
_ZH_GAP = "[^\\s在是为于住到的了把被给向将让对请说写记叫过我你他她们从往址:,。;、和与跟或及]"
_ZH_REGION = lazy(rf"{_ZH_GAP}{{2,8}}?[省市]{_ZH_GAP}{{1,6}}?[区县市]{_ZH_GAP}{{1,12}}?(?:路|街|大道|道|巷|胡同)")
# a province or city and a district, then a compound, a park or a town (南山区科技园)
_ZH_REGION_PLACE = lazy(rf"{_ZH_GAP}{{2,8}}?[省市]{_ZH_GAP}{{1,6}}?[区县]{_ZH_GAP}{{1,10}}?"
                        r"(?:科技园|产业园|工业园|园区|小区|花园|家园|新村|公寓|大厦|广场|中心|镇|乡|村|苑|园)")
# building-unit-room with dashes after a compound or a district (天通苑北一区3-2-501), and the
# Japanese block-lot numbers after a ward or town (渋谷区神南1-2-3)
_ZH_DASHED = lazy(r"(?:区|苑|园|村|町|丁目|小区|家园|新村|[\u4e00-\u9fff]{1,3}[都道府県][\u4e00-\u9fff]{1,4}[区市町村])"
                  r"[\u4e00-\u9fff\u3040-\u30ff]{0,4}?\d{1,3}(?:-\d{1,4}){1,2}(?![\d-])")
# where someone lives or works, said in Chinese, and a place with a number in it (住在望京SOHO塔3)
_ZH_LIVES = lazy(r"(?<!我)(?:住在|家住|家在|住址是?|地址是?)[:：]? ?"
                 r"([^\s，。,;；！？、](?:(?: (?=[0-9])|(?<=[0-9]) )?[^\s，。,;；！？、]){1,20})")
# a city or province and a district, and then a name: 深圳市福田区华强北
_ZH_CITY_DISTRICT = lazy(rf"[省市]{_ZH_GAP}{{1,6}}?[区县]{_ZH_GAP}{{2,}}")
_ZH_UNIT_CHARS = frozenset("号弄栋幢单元室楼层座")
_ZH_NUMBER = lazy(r"[0-9一二三四五六七八九十百零〇两]")
# words that end in a road word but name no road
_ZH_NOT_ROAD = {"路": "线思电道网回通链一套短迷退出进销门铁公马岔歧", "街": "上逛", "村": "农", "区": "时地社专园景",
                "园": "公花乐家校"}
_ZH_LEAD_STOP = set("在是为于住到的了把被给向将让对请说写记叫过我你他她们从往址:,，。；;、 和与跟或及")
_ZH_NAME_MAX = 14


def scan(t, out: list) -> None:
    text = t.norm
    if t.has_digit() and not text.isascii() or t.has_digit() and any(c.isalpha() for c in text):
        words = t.words
        if not _SUFFIXES.isdisjoint(words) or any(w.rstrip(".,") in _CAPITAL_SUFFIXES for w in t.tokens):
            for m in _EN_ADDRESS.finditer(text):
                out.append((m.start(), m.end(), "address"))
        if not _EU_WORDS.isdisjoint(words):
            for m in _EU_ADDRESS.finditer(text):
                out.append((m.start(), m.end(), "address"))
        if any(w[:1].isupper() and w.lower().endswith(_DE_ENDINGS) for w in t.tokens):
            for m in _DE_ADDRESS.finditer(text):
                out.append((m.start(), m.end(), "address"))
        if "box" in t.lower or "信箱" in text or "postfach" in t.lower or "apartado" in t.lower:
            for m in _PO_BOX.finditer(text):
                out.append((m.start(), m.end(), "address"))
        if any(2 <= len(w) <= 4 and w[:1].isupper() and any(c.isdigit() for c in w) for w in t.tokens):
            for m in _POSTCODE.finditer(text):
                out.append((m.start(), m.end(), "address"))
        if any(h in t.lower for h in _LIVES_AT_HINTS):
            for m in _LIVES_AT.finditer(text):
                out.append((m.start(1), m.end(1), "address"))
    if not text.isascii() and not _ZH_UNIT_CHARS.isdisjoint(text) and _ZH_NUMBER.search(text):
        _chinese(text, out)
    if not text.isascii() and ("省" in text or "市" in text) and ("区" in text or "县" in text):
        for pattern in (_ZH_REGION, _ZH_REGION_PLACE):
            for m in pattern.finditer(text):
                out.append((m.start(), m.end(), "address"))
    if not text.isascii() and t.has_digit() and "-" in text:
        for m in _ZH_DASHED.finditer(text):
            out.append((_lead(text, m.start()), m.end(), "address"))
    if not text.isascii() and ("住" in text or "址" in text or "家" in text):
        if t.has_digit() or "区" in text or "县" in text:
            for m in _ZH_LIVES.finditer(text):
                place = m.group(1)
                if any(c.isdigit() for c in place) and any("\u4e00" <= c <= "\u9fff" for c in place) \
                        or _ZH_CITY_DISTRICT.search(place):
                    out.append((m.start(1), m.end(1), "address"))


def _chinese(text: str, out: list) -> None:
    for pattern in (_ZH_ROAD, _ZH_COMPOUND):
        for m in pattern.finditer(text):
            word, start = m.group(1), m.start()
            if start == 0 or text[start - 1] in _ZH_NOT_ROAD.get(word, ""):
                continue
            if word == "区" and not any(u in m.group() for u in ("号楼", "栋", "幢")):
                continue  # 缓存区 5 号: a district is named by its buildings, not by a number
            lead = _lead(text, start)
            if lead < start:
                out.append((lead, m.end(), "address"))
    for m in _ZH_UNITS_ONLY.finditer(text):
        out.append((m.start(), m.end(), "address"))


def _lead(text: str, start: int) -> int:
    """Where the place name before a road word begins: walk left over letters and hanzi."""
    i = start
    while i > 0 and start - i < _ZH_NAME_MAX:
        c = text[i - 1]
        if c in _ZH_LEAD_STOP or not ("\u4e00" <= c <= "\u9fff" or c.isascii() and c.isalnum()):
            break
        i -= 1
    return i
