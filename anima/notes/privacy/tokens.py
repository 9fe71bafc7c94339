"""Private strings: keys and tokens, passwords and PINs, account names, e-mail addresses.

A key or token is found by its shape: the prefixes its issuer gives it (sk-, sk_live_, ghp_,
glpat-, xoxb-, AKIA, AIza, hf_, npm_, SG., whsec_, ...), with a body that holds a digit, even
when read out in chunks ("ghp_ 16C7e42F 292c6912 ..."); JSON web tokens and other dotted
tokens; private key blocks; bearer tokens; webhook URLs that carry their secret; and a long
random-looking value (letters and digits mixed) after a word that says it is one (api key,
token, secret, 密钥, 令牌, ...).

A password is what follows a password word (password, passcode, passphrase, pwd, wifi key,
security answer, 密码, 口令, ...) after ":", "=", "is", "as", 是 or 为, or with nothing between when
it cannot be an everyday word (a digit, a symbol, inner capitals, quoted); a PIN or code is 3 to
8 digits a few words after a PIN word (PIN, CVV, one-time / verification / door code, OTP,
验证码, 取款密码, ...). A user:password@ in a URL is a password too.

An account name is what follows an account word (username, login, account, handle, 用户名, 账号,
微信号, QQ号, ...), when it cannot be an everyday word either.

A name and a password given as a pair after a login word ("login bob / hunter2") is a password;
so are three to six plain words closing the clause after a password word, when none reads as a
clause about the password ("it was correct horse battery staple", not "it was changed last
night"), and Chinese words after 密码是 / 口令为 that do not say what kind of value it is.

An e-mail address is name@domain.tld, also written with spaces round the @ or the dots, or spoken:
"name at domain dot com", "name (at) domain (dot) com", [at], {at}, [@], [.], 艾特, 点 and 。 (a
common top-level domain at the end), or spelled into one word (name_at_domain_dot_com). A plain
"at" with written dots, or "#" for the @, counts after a mail word or with a mail service's domain:
without either, "worked at example.com" is a workplace and "page.html#intro" a link. The machine-
readable line of a passport (P<GBRSMITH<<JOHN<<<...) is a passport.
"""

import re

from anima.notes.privacy.text import lazy

# issuer prefixes; each body is read by _KEY_BODY (and may come in spaced chunks)
_KEY_PREFIX = lazy(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-(?:proj-|ant-(?:api\d\d-|admin\d\d-)?|svcacct-|admin-|live-|test-)?|(?:sk|pk|rk)_(?:live|test)_|whsec_"
    r"|gh[pousr]_|github_pat_|glpat-|gl(?:ptt|dt|rt|soat|cbt)-|xox[abposr]-|xapp-|AKIA|ASIA|ABIA|ACCA|AIza|ya29\."
    r"|GOCSPX-|npm_|pypi-|hf_|SG\.|key-|do[por]_v1_|shp(?:at|ca|pa|ss)_|EAA[A-Z]|hvs\.|sq0(?:atp|csp)-"
    r"|AGE-SECRET-KEY-|lin_api_|dapi|PMAK-|ATATT|glsa_|glc_|sntrys_|xai-|gsk_|r8_|SK(?=[0-9a-f]{32}))")
_KEY_HINTS = ("sk-", "sk_", "pk_", "rk_", "whsec_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
              "glptt-", "gldt-", "glrt-", "glsoat-", "glcbt-", "xox", "xapp-", "AKIA", "ASIA", "ABIA", "ACCA", "AIza",
              "ya29.", "GOCSPX-", "npm_", "pypi-", "hf_", "SG.", "key-", "_v1_", "shpat_", "shpca_", "shppa_",
              "shpss_", "EAA", "hvs.", "sq0", "AGE-SECRET-KEY-", "lin_api_", "dapi", "PMAK-", "ATATT", "glsa_",
              "glc_", "sntrys_", "xai-", "gsk_", "r8_", "SK")
_KEY_BODY = lazy(r"[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*")
_KEY_CHUNK = lazy(r" ([A-Za-z0-9]{2,12}-?)(?![A-Za-z0-9])")
_KEY_MIN = 16

_SHAPES = lazy(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"|(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r"|(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_.-])"
    r"|(?<![0-9])\d{8,10}:AA[A-Za-z0-9_-]{30,}"
    r"|hooks\.slack\.com/services/[A-Za-z0-9/]{20,}|discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}")
_BEARER = lazy(r"\bBearer\s+([A-Za-z0-9._~+/-]{16,}=*)", re.I)
_URL_PASSWORD = lazy(r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]{3,}@", re.I)

# a word that says the value after it is a key; then perhaps "is", ":" or "=", then the value
_KEY_WORDS = lazy(
    r"(?:(?<![A-Za-z0-9])(?:api[_ -]?keys?|apikey|access[_ -]?keys?|secret[_ -]?keys?|private[_ -]?keys?"
    r"|client[_ -]?secrets?|app[_ -]?secrets?|signing[_ -]?keys?|access[_ -]?tokens?|auth[_ -]?tokens?"
    r"|refresh[_ -]?tokens?|api[_ -]?tokens?|bot[_ -]?tokens?|tokens?|secrets?|credentials?|license[_ -]?keys?)"
    r"|密钥|秘钥|私钥|令牌|口令牌)"
    r"[\"'`]?\s*(?:(?:[:=：]|\bis\b|\bwas\b|是|为)\s*)?[\"'`]?", re.I)
_KEY_VALUE = lazy(r"[A-Za-z0-9_./+=-]{16,}")

_ANSWER_WORDS = lazy(
    r"security (?:answer|question)|secret (?:answer|question)|answer to (?:the|their|his|her|my) security question"
    r"|mother's maiden name", re.I)
_ANSWER_HINTS = ("security answer", "security question", "secret answer", "secret question", "maiden name")
_PIN_WORDS = lazy(
    r"(?<![A-Za-z])(?-i:PIN)(?:\s*(?:code|number))?s?(?![A-Za-z])|(?<![A-Za-z])pin (?:code|number)"
    r"|(?<![A-Za-z])(?:atm|bank|card|debit|credit|sim|phone|unlock) pin(?![A-Za-z])"
    r"|(?<![A-Za-z])pin(?=\s*(?:is|was|[:=]))"
    r"|(?<![A-Za-z])(?:\d|four|five|six|eight)[- ]digit (?:pass)?codes?"
    r"|(?:one[- ]time|verification|security|confirmation|2fa|two[- ]factor|auth(?:entication)?|access|door"
    r"|gate|lock|alarm|unlock|sms|login|backup|recovery|otp|garage|safe) (?:pass)?codes?"
    r"|(?<![A-Za-z])(?:OTP|TOTP|CVV2?|CVC2?|CSC)(?![A-Za-z])|(?<![A-Za-z])combination(?= (?:is|was|:))"
    r"|验证码|校验码|动态码|动态口令|安全码|提取码|取件码|支付密码|取款密码|门禁密码|解锁密码", re.I)
_PIN_HINTS = frozenset(("pin", "pins", "code", "codes", "passcode", "otp", "totp", "cvv", "cvv2", "cvc", "cvc2", "csc",
                        "combination"))
_PIN_HINTS_ZH = ("验证码", "校验码", "动态码", "动态口令", "安全码", "提取码", "取件码", "支付密码", "取款密码",
                 "门禁密码", "解锁密码")
_PASSWORD_WORDS = lazy(
    r"(?<![A-Za-z])(?:pass(?:word|wd|code|phrase)s?|pwd|pass word|(?:login|wifi|wi-fi) pass|(?:pass|pw)(?=\s*[:=])"
    r"|(?:wifi|wi-fi|network|wpa) key)(?![A-Za-z])|密码|密碼|口令|暗号", re.I)
_PASSWORD_HINTS = frozenset(("password", "passwords", "passwd", "pwd", "passcode", "passcodes", "passphrase",
                             "passphrases"))
_PASSWORD_PHRASES = ("密码", "密碼", "口令", "暗号", "pass:", "pass =", "pass=", "pass :", "pw:", "pw=", "pw :", "pw =",
                      "login pass", "wifi pass",
                      "wi-fi pass", "wifi key", "wi-fi key", "network key", "wpa key", "pass word")
# "password (for the router) is", "passphrase:", "密码是": what may stand between the word and the value
_SEP = lazy(r"(?:\s+(?:for|to|of|on|at|in)\s+[\w .@'-]{1,30}?)?"
            r"\s*(?:,\s*(?:which|that|it)\s+(?:is|was)|[:：=]|\bis\b|\bwas\b|\bas\b|\bare\b|是|为|為|,)\s*", re.I)
# a name and a password given as a pair after a login word: "login bob / hunter2", "creds: bob:hunter2"
_PAIR = lazy(r"(?<![A-Za-z])(?:log-?ins?|credentials?|creds|账号密码|账密|用户名和密码)\s*(?:is|was|are|[:：=])?\s*"
             r"[A-Za-z0-9._@+-]{2,40}(?: ?/ ?|:)(\S{4,40})", re.I)
_PAIR_HINTS = ("login", "log-in", "credential", "creds", "账号密码", "账密", "用户名和密码")
# a pass phrase of plain words: several, none a function word, to the end of the clause
_PHRASE = lazy(r"((?:[A-Za-z]{2,12} ){2,5}[A-Za-z]{2,12})(?=\s*(?:$|[.;!?\n]))")
_FUNCTION_WORDS = frozenset((  # noqa: SIM905
    "the a an of to in on at by for from with and or but my your our its his her their is are was were be been "
    "this that these those it not no so then i me we you they them he she than as into onto over under about "
    "behind before after if when while which who what where how why do does did can could will would should "
    "must may might have has had there here some any every all each both yesterday today tonight tomorrow last "
    "next week month year night morning evening ago now again soon later already still always never too very "
    "just also only even quite").split())
# what 密码是 / 口令为 may be followed by that is no password: a measure word, an adverb, a question
_ZH_NOT_VALUE = ("个", "一个", "一种", "什么", "多少", "不", "没", "很", "太", "对", "错", "正确", "错误", "安全",
                 "加密", "保密", "空", "必须", "需要", "要", "可以", "用", "由", "从", "在", "被", "怎么", "如何", "哪",
                 "啥", "这",
                 "那", "他", "她", "我", "你", "它", "否", "有", "无", "默认", "同一", "一样", "相同", "固定", "随机",
                 "弱", "强", "长", "短", "明文", "对的", "错的", "一", "几", "多")
_ZH_NOT_IN_VALUE = ("位", "数字", "字母", "字符", "符号", "组合", "格式", "规则", "长度")
_PIN_VALUE = lazy(r"[^0-9.!?。！？;\n]{0,32}?(?<![0-9])(\d(?: ?\d){2,7})(?![0-9]|[.,][0-9])")
_QUOTED = lazy(r"[\"'`“‘「『]([^\"'`”’」』\n]{3,40})[\"'`”’」』]")
_ASCII_VALUE = lazy(r"[!-~]+")
_NOT_VALUES = frozenset((  # noqa: SIM905
    "wrong correct incorrect invalid valid required needed missing expired weak strong empty blank set reset changed "
    "hidden secret private sensitive case-sensitive unknown encrypted hashed stored protected optional mandatory too "
    "not never still the a an now saved ok fine same different long short good bad safe unsafe compromised leaked "
    "redacted masked none null undefined unset ever also only already there here it this that rotated updated "
    "visible shared correctly field fields manager managers box prompt prompts screen screens reset policy rules "
    "rule length strength hint hints change changes entry dialog form page login logins and or but").split())
_TRAILING_PUNCT = ".,;:!?)]}>'\"`"
_CLAUSE_END = lazy(r"\s*(?:$|[.,;:!?)\]\n，。；：！？、）]|[^\x00-\x7f])")

_LOGIN_WORDS = lazy(
    r"(?:(?<![A-Za-z])(?:user ?names?|user ?ids?|log-?in(?: names?| ids?)?|account(?: names?| ids?)?|handles?"
    r"|screen names?|nick ?names?|(?:wechat|skype|telegram|steam|discord|instagram|twitter|qq) (?:id|name|handle)"
    r"|venmo|cash ?app|paypal|instagram|tiktok|snapchat|telegram|twitter|reddit|github|mastodon|discord"
    r"|qq(?=\s*[:：=]))"
    r"(?![A-Za-z])|用户名|登录名|登录账号|(?:账号|帐号|账户)(?:名称?)?|微信 ?号|微信|QQ ?号|支付宝账号|支付宝)", re.I)
_LOGIN_HINTS = frozenset(("username", "usernames", "userid", "userids", "login", "logins", "log", "account", "venmo",
                          "cashapp", "cash", "paypal", "instagram", "tiktok", "snapchat", "telegram", "twitter",
                          "reddit", "github", "mastodon", "discord",
                          "accounts", "handle", "handles", "nickname", "nicknames", "nick", "id", "ids", "qq", "name"))
_LOGIN_HINTS_ZH = ("用户名", "登录", "账号", "帐号", "账户", "微信", "QQ", "支付宝")
_LOGIN_SEP = lazy(r"\s*(?:(?:[:：=,]|\bis\b|\bwas\b|\bas\b|是|为)\s*)?[\"'“‘]?@?")
_NUMBERED_LOGIN = lazy(r"id|qq|account|账号|帐号|支付宝|微信", re.I)
_LOGIN_VALUE = lazy(r"[A-Za-z0-9][A-Za-z0-9._@+-]{2,}")

# the machine-readable line of a passport: P, the type, the issuing state, the name in "<"s
_MRZ = lazy(r"(?<![A-Z0-9<])P[A-Z<][A-Z]{3}[A-Z<]{20,}")

_EMAIL = lazy(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+ ?@ ?[A-Za-z0-9-]+(?:(?:\.| \. )[A-Za-z0-9-]+)*(?:\.| \. )"
                    r"[A-Za-z]{2,}(?![A-Za-z0-9-])")
# the ways an @ and a dot are said or disguised: spoken (at, dot, 艾特, 点), bracketed ([at], (@), [.]),
# a full stop of Chinese type (。), or "#" for "@" (a common way round a form that rejects an "@")
_AT = (r"(?:\s*[\[({<]\s*(?:at|@|艾特)\s*[\])}>]\s*|\s+at\s+|\s*艾特\s*|\s*#\s*|\s*@\s*)")
_DOT = r"(?:\s*[\[({<]\s*(?:dot|\.|点)\s*[\])}>]\s*|\s+dot\s+|\s*点\s*|\s*。\s*|\.)"
_SPOKEN_EMAIL = lazy(
    rf"(?:(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+|(?<![\u4e00-\u9fff])[\u4e00-\u9fff]{{2,4}}(?=艾特))"
    rf"(?:(?:\s+dot\s+|点)[A-Za-z0-9_%+-]+)*"
    rf"(?P<at>{_AT})[A-Za-z0-9-]+(?:{_DOT}[A-Za-z0-9-]+)*{_DOT}(?P<tld>[A-Za-z]{{2,6}})(?![A-Za-z0-9])", re.I)
_SPOKEN_AT_MARKED = ("(at)", "[at]", "{at}", "<at>", "( at )", "[ at ]", "艾特", "[@]", "(@)", "{@}", "<@>", "#", "@")
_SPOKEN_DOT = (" dot ", "(dot)", "[dot]", "{dot}", "<dot>", "( dot )", "[ dot ]", "点", "[.]", "(.)", "。")
# the mail services whose name after a plain " at " is an address, not a workplace ("at qq.com")
_MAIL_HOSTS = frozenset((  # noqa: SIM905
    "qq gmail googlemail 163 126 yeah sina sohu foxmail aliyun 139 outlook hotmail live msn yahoo ymail icloud me "
    "mac proton protonmail pm yandex mail gmx web aol zoho fastmail tutanota hey").split())
# an address with its @ and dots spelled into the name, as a form that rejects them makes people do
_UNDERSCORED_EMAIL = lazy(r"(?<![A-Za-z0-9])[A-Za-z0-9.+-]+_at_[A-Za-z0-9-]+(?:_dot_[A-Za-z0-9-]+)*_dot_[A-Za-z]{2,6}"
                          r"(?![A-Za-z0-9])", re.I)
_MAIL_WORDS = lazy(r"e-?mails?|mail|inbox|邮箱|邮件|电邮|contact|联系", re.I)
_TLDS = frozenset((  # noqa: SIM905
    "com net org edu gov mil int io co ai app dev me info biz name pro xyz tech site online cn uk jp de fr es it nl "
    "be ch at se no dk fi ie pt pl ru ua in au nz ca us mx br ar hk tw sg kr my th vn id ph za eu cc tv").split())


def scan(t, out: list) -> None:
    text, lower, words = t.norm, t.lower, t.words
    _keys(t, out)
    digits = t.has_digit()
    if digits and (not _PIN_HINTS.isdisjoint(words) or "digit" in lower or any(h in text for h in _PIN_HINTS_ZH)):
        from anima.notes.privacy.numbers import quantity

        for m in _PIN_WORDS.finditer(text):
            value = _PIN_VALUE.match(text, m.end())
            if value and not quantity(text, value.end(1)):
                out.append((m.start(), value.end(1), "password"))
    if not _PASSWORD_HINTS.isdisjoint(words) or any(h in lower for h in _PASSWORD_PHRASES):
        for m in _PASSWORD_WORDS.finditer(text):
            end = _password_end(text, m, False)
            if end:
                out.append((m.start(), end, "password"))
    if any(h in lower for h in _PAIR_HINTS):
        for m in _PAIR.finditer(text):
            value = m.group(1).rstrip(_TRAILING_PUNCT)
            if _secretish(value) and value.lower() not in _NOT_VALUES:
                out.append((m.start(), m.start(1) + len(value), "password"))
    if any(h in lower for h in _ANSWER_HINTS):
        for m in _ANSWER_WORDS.finditer(text):
            end = _password_end(text, m, True)
            if end:
                out.append((m.start(), end, "password"))
    if "://" in text:
        for m in _URL_PASSWORD.finditer(text):
            out.append((m.start(), m.end() - 1, "password"))
    if (not _LOGIN_HINTS.isdisjoint(words) or any(h in text for h in _LOGIN_HINTS_ZH)) and _a_name_in(t):
        _logins(text, out)
    if "_at_" in lower and "_dot_" in lower:
        for m in _UNDERSCORED_EMAIL.finditer(text):
            out.append((m.start(), m.end(), "email"))
    if "<<" in text:
        for m in _MRZ.finditer(text):
            out.append((m.start(), m.end(), "passport"))
    if "@" in text:
        for m in _EMAIL.finditer(text):
            out.append((m.start(), m.end(), "email"))
    if any(h in lower for h in _SPOKEN_AT_MARKED) or " at " in lower and (
            any(h in lower for h in _SPOKEN_DOT) or "." in lower):
        for m in _SPOKEN_EMAIL.finditer(text):
            found, at = m.group(), m.group("at").strip().lower()
            if m.group("tld").lower() not in _TLDS or at == "@" and "。" not in found:
                continue  # a plain name@domain.tld is _EMAIL's
            if at in ("at", "#") and not re.search(r"\sdot\s|点|。", found, re.I):
                # "name at domain.com" is also how one says where someone worked, and "#" is a
                # fragment of a link: either counts with a mail service or a mail word before it
                host = re.split(r"\s*(?:\.|dot)\s*", found[m.end("at") - m.start():], maxsplit=1)[0].lower()
                if host not in _MAIL_HOSTS and not _MAIL_WORDS.search(text, max(0, m.start() - 24), m.start()):
                    continue
            out.append((m.start(), m.end(), "email"))


def _a_name_in(t) -> bool:
    """Whether any word could be an account name: it holds a digit, "_" or an inner dot."""
    return any(any(c.isdigit() for c in w) or "_" in w or "." in w.strip(".") or not w.isascii() for w in t.tokens)


def _keys(t, out: list) -> None:
    text, lower = t.norm, t.lower
    if any(h in text for h in _KEY_HINTS):
        for m in _KEY_PREFIX.finditer(text):
            end = _key_end(text, m.end(), len(m.group()))
            if end:
                out.append((m.start(), end, "api_key"))
    if "-----BEGIN" in text or "eyJ" in text or ":AA" in text or "hooks.slack" in lower or "discord" in lower \
            or any(len(w) >= 40 and w.count(".") >= 2 for w in t.tokens):
        for m in _SHAPES.finditer(text):
            if m.group().startswith(("-----", "eyJ", "hooks", "discord")) or _random(m.group().replace(".", "")):
                out.append((m.start(), m.end(), "api_key"))
    if "bearer" in lower:
        for m in _BEARER.finditer(text):
            if any(c.isdigit() for c in m.group(1)):
                out.append((m.start(), m.end(), "api_key"))
    if any(w in lower for w in ("key", "token", "secret", "credential", "密钥", "秘钥", "私钥", "令牌")) \
            and any(len(w) >= 16 and any(c.isdigit() for c in w) for w in t.tokens):
        for m in _KEY_WORDS.finditer(text):
            value = _KEY_VALUE.match(text, m.end())
            if value and _random(value.group()):
                out.append((m.start(), value.end(), "api_key"))


def _key_end(text: str, pos: int, prefix: int) -> int:
    """Where the body of a key that starts at `pos` ends, chunks read out with spaces included;
    0 if it is too short or holds no digit. A long prefix (sk-ant-api03-, github_pat_) says
    "key" by itself, so a shorter body is enough after it."""
    body = _KEY_BODY.match(text, pos)
    end = body.end() if body else pos
    length = end - pos
    while length < 40:
        chunk = _KEY_CHUNK.match(text, end)
        if not chunk or not _chunk_of_key(chunk.group(1)):
            break
        end, length = chunk.end(), length + len(chunk.group(1))
    value = text[pos:end].replace(" ", "")
    shortest = 6 if prefix >= 8 else 10
    if len(value) < shortest or not any(c.isdigit() for c in value) \
            or (len(value) < _KEY_MIN and " " in text[pos:end]):
        return 0
    return end


def _chunk_of_key(chunk: str) -> bool:
    """A piece of a key read out in chunks, not the next word: it holds a digit, or a capital
    after its first letter, or it ends in the dash that joins a key's segments ("sk- proj- ...")."""
    return any(c.isdigit() for c in chunk) or any(c.isupper() for c in chunk[1:]) or chunk.endswith("-")


def _random(value: str) -> bool:
    """Letters and digits mixed as a generated secret mixes them, not as words and numbers do."""
    value = value.strip("=")
    if len(value) < 16:
        return False
    digits = sum(c.isdigit() for c in value)
    upper = sum(c.isupper() for c in value)
    lower = sum(c.islower() for c in value)
    if not digits or not (upper or lower):
        return False
    if not upper and all(c in "0123456789abcdef-" for c in value.lower()) and "-" in value:
        return False  # a UUID
    # class changes: a generated string changes between letters and digits (or case) every few characters
    changes = sum(1 for a, b in zip(value, value[1:], strict=False) if _cls(a) != _cls(b))
    return changes >= len(value) / 6


def _cls(c: str) -> int:
    return 0 if c.isdigit() else 1 if c.isupper() else 2 if c.islower() else 3


def _password_end(text: str, m, answer: bool) -> int:
    """Where the password after the word `m` ends, or 0 when there is none."""
    zh = not m.group().isascii()
    pos = m.end()
    sep = _SEP.match(text, pos)
    has_sep = bool(sep and sep.group().strip())
    pos = sep.end() if sep else pos
    while pos < len(text) and text[pos] == " ":
        pos += 1
    quoted = _QUOTED.match(text, pos)
    if quoted:
        return quoted.end()
    if answer:
        value = re.match(r"[^.!?。！？;\n]{2,40}", text[pos:]) if has_sep else None
        return pos + len(value.group().rstrip(" ,")) if value else 0
    value = _ASCII_VALUE.match(text, pos)
    if not value:
        if zh and has_sep:  # 口令是芝麻开门: a password in Chinese words, after a 是, 为 or colon
            value = re.match(r"[\u4e00-\u9fff]{2,12}", text[pos:])
            if value and not value.group().startswith(_ZH_NOT_VALUE) \
                    and not any(w in value.group() for w in _ZH_NOT_IN_VALUE):
                return pos + len(value.group())
        return 0
    phrase = _PHRASE.match(text, pos) if has_sep and not zh else None
    if phrase and _pass_phrase(phrase.group(1).lower().split()):
        return phrase.end(1)  # "it was correct horse battery staple"
    raw = value.group()
    kept = raw.rstrip(_TRAILING_PUNCT) if len(raw.rstrip(_TRAILING_PUNCT)) >= 3 else raw
    if len(kept) < 3 or _placeholder(kept) or kept.lower() in _NOT_VALUES:
        return 0
    end = pos + len(kept)
    if zh:
        return end
    if not _secretish(kept):
        # a plain word is a password only after a separator and closing the clause ("the password
        # is swordfish."), never an everyday word ("the password is wrong")
        if not has_sep or sep.group().strip() == "," or len(kept) < 4 or not _CLAUSE_END.match(text, end):
            return 0
    return end


def _pass_phrase(words: list) -> bool:
    """Plain words that read as a pass phrase, not as a clause about the password ("was changed last
    night", "is too short"): no function word, no verb or adverb form, no word that tells of a
    password's state but the first ("correct horse battery staple")."""
    return not _FUNCTION_WORDS.intersection(words) and not _NOT_VALUES.intersection(words[1:]) \
        and not any(w.endswith(("ed", "ing", "ly")) for w in words)


def _secretish(value: str) -> bool:
    """A digit, a symbol, or inner capitals: not an ordinary English word."""
    if any(c.isdigit() for c in value):
        return True
    if any(not (c.isalpha() or c in "-'") for c in value):
        return True
    return any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)


def _placeholder(value: str) -> bool:
    return not value.strip("*•xX#._-<>") or value.lower().strip("<>[]()") in ("redacted", "hidden", "masked")


def _logins(text: str, out: list) -> None:
    for m in _LOGIN_WORDS.finditer(text):
        sep = _LOGIN_SEP.match(text, m.end())
        pos = sep.end()
        if not m.group().isascii() and pos < len(text) and text[pos] == " ":
            pos += 1
        value = _LOGIN_VALUE.match(text, pos)
        if not value:
            continue
        name = value.group().rstrip(".-")
        if name.lower() in _NOT_VALUES or not _secretish(name):
            continue
        if name.isdigit() and (len(name) < 5 or not _NUMBERED_LOGIN.search(m.group())):
            continue  # "handle 12345 requests": only an id, QQ or account number is a number
        out.append((m.start(), pos + len(name), "login"))
