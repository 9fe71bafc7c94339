"""anima.notes.privacy: the user's private data is found in a self-note; an ordinary self-note yields nothing."""

import subprocess
import sys

import pytest

from anima.notes.privacy import DEFAULT_SENSITIVE_WORDS, Finding, describe, scan

# Valid GB 11643 resident IDs (checksum computed, real birth dates).
VALID_IDS = ["11010519491231002X", "440304198506151237", "310115199003078764", "110105200002291235"]
# Luhn-valid card numbers.
VALID_CARDS = ["4111111111111111", "5454545454545454", "6222021234567890128", "378282246310005"]

# (kind, note, the exact text reported)
POSITIVE = [
    # e-mail
    ("email", "The user asked me to remember zhang.san@example.com for later.", "zhang.san@example.com"),
    ("email", "我记下了用户的邮箱 li_si+work@qq.com，这不该写进笔记。", "li_si+work@qq.com"),
    ("email", "I almost quoted Bob.Smith@mail.example.co.uk in my reply.", "Bob.Smith@mail.example.co.uk"),
    # phone
    ("phone", "用户的手机号是13812345678，我不该记住。", "13812345678"),
    ("phone", "I saved +86 138-1234-5678 as the user's number.", "+86 138-1234-5678"),
    ("phone", "我把 86 139 1234 5678 写进了回答里。", "86 139 1234 5678"),
    ("phone", "用户的座机是010-62751234。", "010-62751234"),
    ("phone", "我打给了 0755-86013388 这个号码。", "0755-86013388"),
    ("phone", "The user said to call +1 (415) 555-0132 tomorrow.", "+1 (415) 555-0132"),
    ("phone", "I noted their London office, +44 20 7946 0958.", "+44 20 7946 0958"),
    ("phone", "I wrote down +81-3-1234-5678 for the user.", "+81-3-1234-5678"),
    ("phone", "I repeated (415) 555-0132 back to the user.", "(415) 555-0132"),
    ("phone", "I kept the phone: 020 7946 0958 in my notes.", "020 7946 0958"),
    # Chinese resident ID
    ("id_number", "用户的身份证号是11010519491231002X。", "11010519491231002X"),
    ("id_number", "I echoed the ID 440304198506151237 back to the user.", "440304198506151237"),
    ("id_number", "我看到了身份证310115199003078764，下次要提醒用户打码。", "310115199003078764"),
    ("id_number", "I copied id 11010519491231002x with a lower-case x.", "11010519491231002x"),
    # passport
    ("passport", "用户的护照号码是E12345678。", "护照号码是E12345678"),
    ("passport", "I repeated the passport no. K1234567 in my summary.", "passport no. K1234567"),
    ("passport", "I saw passport number: 123456789 in the form.", "passport number: 123456789"),
    ("passport", "我把护照：G12345678写进了回复。", "护照：G12345678"),
    ("passport", "I noted EA1234567 from the scan.", "EA1234567"),
    ("passport", "The user's Passport is 5A9876543, and I echoed it.", "Passport is 5A9876543"),
    # bank card
    ("bank_card", "The user pasted card 4111 1111 1111 1111 into the chat.", "4111 1111 1111 1111"),
    ("bank_card", "用户的银行卡号6222021234567890128被我复述了。", "6222021234567890128"),
    ("bank_card", "I repeated 5454-5454-5454-5454 in my answer.", "5454-5454-5454-5454"),
    ("bank_card", "我看到 3782 822463 10005 这张卡。", "3782 822463 10005"),
    ("bank_card", "卡号是 6222 0212 3456 7890 128。", "6222 0212 3456 7890 128"),
    # address
    ("address", "I confused 221B Baker Street with another address.", "221B Baker Street"),
    ("address", "The user lives at 1600 Pennsylvania Avenue NW, I said too much.", "1600 Pennsylvania Avenue NW"),
    ("address", "I mailed the draft to 42 Elm St. yesterday.", "42 Elm St."),
    ("address", "I wrote Apt 5, 10 Main Rd on the label.", "Apt 5, 10 Main Rd"),
    ("address", "I recorded 350 Fifth Avenue as the venue.", "350 Fifth Avenue"),
    ("address", "用户住在北京市朝阳区建国路88号。", "北京市朝阳区建国路88号"),
    ("address", "我记下了上海市浦东新区世纪大道100号3号楼。", "上海市浦东新区世纪大道100号3号楼"),
    ("address", "地址是XX路12号，我不该写出来。", "XX路12号"),
    ("address", "我把XX街道5号院说漏了。", "XX街道5号院"),
    ("address", "用户家在阳光小区3栋2单元501室。", "阳光小区3栋2单元501室"),
    # password
    ("password", "The user told me password: hunter2 and I repeated it.", "password: hunter2"),
    ("password", "I learned the password is swordfish.", "password is swordfish"),
    ("password", "I echoed pwd=abc123 from the config.", "pwd=abc123"),
    ("password", "I saw passcode: 8421 in the message.", "passcode: 8421"),
    ("password", "I repeated that the password for the router is 'tulips'.", "password for the router is 'tulips'"),
    ("password", "用户说密码是abc123，我记住了。", "密码是abc123"),
    ("password", "我看到了密码：Qwerty!9", "密码：Qwerty!9"),
    ("password", "口令=letmein2024 被我写进了日志。", "口令=letmein2024"),
    # API keys and tokens
    ("api_key", "I printed sk-abcdefghijklmnopqrstuvwxyz123456 by mistake.", "sk-abcdefghijklmnopqrstuvwxyz123456"),
    ("api_key", "I leaked sk-proj-Abc123_def456-GHI789jkl012 in a log.", "sk-proj-Abc123_def456-GHI789jkl012"),
    ("api_key", "我把 ghp_1234567890abcdefghijABCDEFGHIJ123456 贴出来了。", "ghp_1234567890abcdefghijABCDEFGHIJ123456"),
    ("api_key", "I saw github_pat_11ABCDEFG0123456789_abcdefghijklmnop in a diff.",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"),
    ("api_key", "I echoed AKIAIOSFODNN7EXAMPLE from the env.", "AKIAIOSFODNN7EXAMPLE"),
    ("api_key", "I pasted xoxb-123456789012-abcdefghij into chat.", "xoxb-123456789012-abcdefghij"),
    ("api_key", "I repeated AIzaSyA1234567890abcdefghijklmnopqrstuv in code.", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    ("api_key", "我打印了 eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n 这个令牌。",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n"),
    ("api_key", "I sent Authorization: Bearer abcdef1234567890abcd upstream.", "Bearer abcdef1234567890abcd"),
    ("api_key", "I quoted -----BEGIN RSA PRIVATE KEY----- in a reply.", "-----BEGIN RSA PRIVATE KEY-----"),
    ("api_key", "I quoted -----BEGIN OPENSSH PRIVATE KEY----- too.", "-----BEGIN OPENSSH PRIVATE KEY-----"),
    ("api_key", "I wrote api_key=abcd1234efgh5678ijkl in the example.", "api_key=abcd1234efgh5678ijkl"),
    ("api_key", "I logged token: 9f8e7d6c5b4a39281706 by accident.", "token: 9f8e7d6c5b4a39281706"),
    ("api_key", "用户的密钥：Zx9Yw8Vu7Ts6Rq5Po4 被我复述了。", "密钥：Zx9Yw8Vu7Ts6Rq5Po4"),
    # health / finance words
    ("sensitive_word", "The user was diagnosed last year and I brought it up.", "diagnosed"),
    ("sensitive_word", "I mentioned the user's Salary in my reply.", "Salary"),
    ("sensitive_word", "I talked about their blood  pressure again.", "blood  pressure"),
    ("sensitive_word", "I asked about the HIV test results.", "HIV"),
    ("sensitive_word", "用户说他的月薪不高，我不该记下来。", "月薪"),
    ("sensitive_word", "我提到了用户的房贷。", "房贷"),
    ("sensitive_word", "用户确诊后心情低落。", "确诊"),
]


@pytest.mark.parametrize("kind,note,expected", POSITIVE, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVE)])
def test_finds_private_data(kind, note, expected):
    findings = scan(note)
    assert [(f.kind, f.match) for f in findings] == [(kind, expected)]
    f = findings[0]
    assert note[f.start:f.start + len(f.match)] == f.match
    assert f.end == f.start + len(expected)


def test_at_least_three_examples_per_kind():
    kinds = {"email", "phone", "id_number", "passport", "bank_card", "address", "password", "api_key", "sensitive_word"}
    for kind in kinds:
        assert sum(k == kind for k, _, _ in POSITIVE) >= 3, kind


FALSE_POSITIVES = [
    "I tend to over-explain when I am unsure; I will try shorter answers.",
    "我发现自己在用户着急的时候会说得太多，下次先给结论。",
    "I noticed I answer faster in the morning session.",
    "I worked through 3 steps and 12 files today.",
    "我今天连续处理了 20 个问题，耐心还在。",
    "Version 2.10.3 fixed my habit of repeating myself.",
    "I keep my notes under 120 characters.",
    "I was wrong twice about the year 2024 and corrected it.",
    "I like using the tool `rg` with 4 threads.",
    "I logged the event at timestamp 1764480000 and moved on.",
    "I set 20261130 as the date of my next review.",
    # more ordinary notes an agent writes about itself
    "I ran 3 tests at 14:05 and 2 failed because I forgot the fixture.",
    "I misread port 8080 as 8000 twice today.",
    "I like the 2024-11-30 release notes style.",
    "I confused UTC+8 with UTC+9 once.",
    "I read the IPv4 address 192.168.1.100 from the config.",
    "I used a UUID 123e4567-e89b-12d3-a456-426614174000 in a test.",
    "Timestamp 1764480000123 appeared in my logs.",
    "I processed 1,234,567 rows without complaint.",
    "My context window is 128000 tokens and I forget that.",
    "I used 1200 tokens: too many.",
    "I accumulate technical debt when I rush.",
    "I diagnosed the bug too quickly.",
    "The password is required for every login, I keep forgetting that.",
    "I think the password was weak.",
    "I forget the password is case-sensitive.",
    "My passport to better answers is brevity.",
    "I fixed 2 Bugs In The Square root helper.",
    "Step 3. Way forward is shorter.",
    "我在 10 分钟内修好了 1 个 bug。",
    "我诊断了一下代码问题，思路还算清楚。",
    "我在线路3号上踩了坑。",
    "我把版本号 2.10.3 记错了一次。",
    "我的回答平均 120 字，下次控制在 80 字以内。",
    "我把数据库的 5 号表和 6 号表弄混了。",
    "",
]


@pytest.mark.parametrize("note", FALSE_POSITIVES)
def test_ordinary_self_notes_have_no_findings(note):
    assert scan(note) == []


@pytest.mark.parametrize("number", VALID_IDS)
def test_id_checksum_valid_is_flagged(number):
    assert [f.kind for f in scan(f"I saw {number} today.")] == ["id_number"]


@pytest.mark.parametrize("number", VALID_IDS)
@pytest.mark.parametrize("position", [0, 5, 14, 16])
def test_id_with_one_digit_changed_is_not_an_id(number, position):
    changed = number[:position] + str((int(number[position]) + 1) % 10 or 1) + number[position + 1:]
    assert changed != number
    assert "id_number" not in [f.kind for f in scan(f"I saw {changed} today.")]


def test_id_needs_a_real_birth_date():
    # 19491331 has month 13: the checksum is made valid, the date is not.
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    for base in ("11010519491331002", "11010519490230002", "11010519990229002"):  # month 13, Feb 30, Feb 29 1999
        number = base + "10X98765432"[sum(int(base[i]) * weights[i] for i in range(17)) % 11]
        assert "id_number" not in [f.kind for f in scan(number)]


def test_random_18_digits_with_wrong_checksum_may_only_be_a_card():
    number = "622202123456789012"  # wrong GB 11643 checksum; Luhn-valid
    assert [f.kind for f in scan(number)] == ["bank_card"]


def test_valid_id_is_reported_once_as_id():
    # Whatever else the digits might look like, an ID wins and is reported once.
    assert [f.kind for f in scan("11010519491231002X")] == ["id_number"]


@pytest.mark.parametrize("card", VALID_CARDS)
def test_luhn_valid_card_is_flagged(card):
    assert [(f.kind, f.match) for f in scan(f"card {card}.")] == [("bank_card", card)]


@pytest.mark.parametrize("card", VALID_CARDS)
def test_luhn_off_by_one_is_not_a_card(card):
    off = card[:-1] + str((int(card[-1]) + 1) % 10)
    assert [f.kind for f in scan(f"card {off}.")] == []


def test_card_grouped_off_by_one_is_not_a_card():
    assert scan("card 4111 1111 1111 1112.") == []


def test_findings_in_text_order():
    note = "密码是abc123, mail zhang@example.com, 手机13812345678, my salary."
    findings = scan(note)
    assert [f.kind for f in findings] == ["password", "email", "phone", "sensitive_word"]
    assert [f.start for f in findings] == sorted(f.start for f in findings)


@pytest.mark.parametrize("kind,note,expected", [p for p in POSITIVE if p[0] != "sensitive_word"],
                         ids=[f"{p[0]}-{i}" for i, p in enumerate(POSITIVE) if p[0] != "sensitive_word"])
def test_describe_never_repeats_the_secret(kind, note, expected):
    (f,) = scan(note)
    text = describe(f)
    assert expected not in text
    assert text.endswith(expected[-2:] + ")")
    assert expected[:-2] not in text or len(expected) <= 4


@pytest.mark.parametrize("kind,phrase", [
    ("email", "an e-mail address"),
    ("bank_card", "a bank card number (passes the Luhn check)"),
    ("id_number", "a Chinese resident ID number"),
    ("phone", "a phone number"),
    ("passport", "a passport number"),
    ("address", "a street address"),
    ("password", "a password"),
    ("api_key", "an API key or access token"),
])
def test_describe_phrases(kind, phrase):
    assert describe(Finding(kind, "0123456789abcdef", 0)).startswith(phrase + " (")


def test_describe_sensitive_word_names_it():
    assert describe(Finding("sensitive_word", "salary", 3)) == "the health or finance word 'salary'"
    (f,) = scan("我不该提用户的工资。")
    assert describe(f) == "the health or finance word '工资'"


def test_custom_word_list_replaces_the_default():
    note = "I mentioned the user's salary and their divorce."
    assert [f.match for f in scan(note)] == ["salary"]
    assert [f.match for f in scan(note, ["divorce", "离婚"])] == ["divorce"]
    assert [f.match for f in scan("用户离婚了", ("离婚",))] == ["离婚"]
    assert scan(note, []) == []
    assert [f.match for f in scan(note, DEFAULT_SENSITIVE_WORDS + ("divorce",))] == ["salary", "divorce"]


def test_custom_word_list_keeps_word_boundaries_and_case():
    assert [f.match for f in scan("Divorced? No: a divorce.", ["divorce"])] == ["divorce"]
    assert [f.match for f in scan("The DIVORCE came up.", iter(["divorce"]))] == ["DIVORCE"]


def test_default_words_cover_both_languages():
    for word in ("diagnosed", "HIV", "salary", "mortgage", "credit score", "确诊", "工资", "房贷", "信用分", "破产"):
        assert word in DEFAULT_SENSITIVE_WORDS
    for word in DEFAULT_SENSITIVE_WORDS:
        assert [f.kind for f in scan(f"I said {word} .")] == ["sensitive_word"], word


@pytest.mark.parametrize("note", [
    "I accumulate technical debt when I rush.",
    "I diagnosed the flaky test in two minutes.",
    "I wrote a diagnosis of the failing build.",
    "我诊断了一下代码问题。",
    "我把这条经验收入笔记。",
])
def test_engineering_senses_of_sensitive_words_are_not_reported(note):
    assert scan(note) == []


def test_engineering_exceptions_do_not_hide_real_health_data():
    note = "The user was diagnosed with depression after tests."
    assert [f.match for f in scan(note)] == ["diagnosed", "depression"]
    assert [f.match for f in scan("用户诊断为抑郁症的原因很复杂。")] == ["诊断", "抑郁症"]


def test_english_words_respect_word_boundaries():
    note = "I archive old notes; I save my income-free thoughts."
    assert scan(note) == [Finding("sensitive_word", "income", note.index("income"))]
    assert scan("I keep an archive of my loaner laptops.") == []


def test_finding_value_semantics():
    f = Finding("email", "a@b.cd", 4)
    assert f == Finding("email", "a@b.cd", 4) and f != Finding("email", "a@b.cd", 5)
    assert {f, Finding("email", "a@b.cd", 4)} == {f}
    assert "a@b.cd" in repr(f)


def test_import_is_cheap():
    code = ("import sys; before = set(sys.modules); import anima.notes.privacy; "
            "print(sorted(m for m in set(sys.modules) - before if not m.startswith('anima')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30)
    assert proc.stdout.strip() == "[]"
