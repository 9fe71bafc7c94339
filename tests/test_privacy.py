"""anima.notes.privacy: the user's private data is found in a self-note; an ordinary self-note yields nothing."""

import subprocess
import sys

import pytest

from anima.infra.errors import Refused
from anima.notes import privacy
from anima.notes.privacy import Finding, describe, scan

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
    # health and finance words
    ("health", "The user was diagnosed last year and I brought it up.", "diagnosed"),
    ("finance", "I mentioned the user's Salary in my reply.", "Salary"),
    ("health", "I talked about their blood  pressure again.", "blood  pressure"),
    ("health", "I asked about the HIV test results.", "HIV"),
    ("finance", "用户说他的月薪不高，我不该记下来。", "月薪"),
    ("finance", "我提到了用户的房贷。", "房贷"),
    ("health", "用户确诊后心情低落。", "确诊"),
    # written the other ways people write them: full width, separators, words, spelled out
    ("email", "我记住了他的邮箱：ｚｈａｎｇ＠ｑｑ．ｃｏｍ。", "ｚｈａｎｇ＠ｑｑ．ｃｏｍ"),
    ("email", "I saved sam dot lee at gmail dot com for them.", "sam dot lee at gmail dot com"),
    ("email", "I wrote chen_wei[at]outlook[dot]com in my summary.", "chen_wei[at]outlook[dot]com"),
    ("email", "我把 chen艾特gmail点com 记了下来。", "chen艾特gmail点com"),
    ("phone", "我把用户发来的１３８１２３４５６７８存了下来。", "１３８１２３４５６７８"),
    ("phone", "I repeated 186.2345.6789 in my reply.", "186.2345.6789"),
    ("phone", "I noted 415 555 0132 as their number.", "415 555 0132"),
    ("phone", "I wrote down one three eight one two three four five six seven eight.",
     "one three eight one two three four five six seven eight"),
    ("phone", "我把用户的号码 一三八一二三四五六七八 记在了心里。", "一三八一二三四五六七八"),
    ("phone", "我记下了 137—1234—5678 这个号码。", "137—1234—5678"),
    ("id_number", "I copied their social security number 458-22-1930 into the form.", "458-22-1930"),
    ("id_number", "My notes held ssn: 601458823 for a moment.", "601458823"),
    ("id_number", "I noted the driver's license number D4521-8830-1192.", "driver's license number D4521-8830-1192"),
    ("id_number", "我把用户的社保号 1234 5678 9012 记错了一位。", "社保号 1234 5678 9012"),
    ("bank_card", "我把卡号６２２５２７６０１８９５５５９３发给了别人。", "６２２５２７６０１８９５５５９３"),
    ("bank_card", "I memorised their card: four five two six zero one eight one five nine zero eight three zero one two.",
     "four five two six zero one eight one five nine zero eight three zero one two"),
    # bank accounts
    ("bank_account", "I pasted the user's IBAN DE12 0139 6245 9571 1777 74 into a message.",
     "DE12 0139 6245 9571 1777 74"),
    ("bank_account", "I noted their IBAN GB09WEST12154728038528 for the refund.", "GB09WEST12154728038528"),
    ("bank_account", "I repeated their account number 12345678 to them.", "12345678"),
    ("bank_account", "我复述了对公账户 1100 1234 5678 9012 3456。", "1100 1234 5678 9012 3456"),
    # addresses in lower case and in Chinese without a number
    ("address", "I wrote the user's home, 42 elm street, on the invoice.", "42 elm street"),
    ("address", "I noted they moved to 221b baker st last month.", "221b baker st"),
    ("address", "I remembered the user lives at 4 privet drive, little whinging.", "4 privet drive"),
    ("address", "我记下了她住在上海市徐汇区漕溪北路。", "上海市徐汇区漕溪北路"),
    ("address", "我记住了用户家：成都市武侯区人民南路四段十二号。", "成都市武侯区人民南路四段十二号"),
    # dates of birth
    ("birth_date", "I remembered that the user's birthday is 14 March 1990.", "birthday is 14 March 1990"),
    ("birth_date", "I wrote DOB: 03/11/1979 into the form for them.", "DOB: 03/11/1979"),
    ("birth_date", "我记下了用户的生日：1991年3月15日。", "生日：1991年3月15日"),
    ("birth_date", "我记住了用户是1995年出生的。", "1995年出生"),
    # PINs, codes, passwords said other ways
    ("password", "I noted their PIN is 4821.", "PIN is 4821"),
    ("password", "I said their PIN out loud: one nine eight four.", "PIN out loud: one nine eight four"),
    ("password", "I remembered the pin code: 7 7 3 1.", "pin code: 7 7 3 1"),
    ("password", "I echoed the verification code 630 118 in the chat.", "verification code 630 118"),
    ("password", "我说出了用户的取款密码六六八八。", "取款密码六六八八"),
    ("password", "I accidentally typed their password hunter2 into the chat.", "password hunter2"),
    ("password", "I pasted postgres://admin:s3cretPass@db.example.com/app in a reply.", "postgres://admin:s3cretPass"),
    # account names
    ("login", "I noted their username is mchen_1987.", "username is mchen_1987"),
    ("login", "我记下了用户的微信号 wxid_k83jd92。", "微信号 wxid_k83jd92"),
    ("login", "我记住了他的QQ号 283746591。", "QQ号 283746591"),
    # keys of other issuers, and read out
    ("api_key", "I pasted sk_live_51H8xKjL2mN4pQ7rS9tUvW0yZ into the reply.", "sk_live_51H8xKjL2mN4pQ7rS9tUvW0yZ"),
    ("api_key", "I logged glpat-xY3kL9mN2pQ7rS5tV8wZ in a diff.", "glpat-xY3kL9mN2pQ7rS5tV8wZ"),
    ("api_key", "I wrote the key s k _ l i v e _ 8 a 7 B 6 c 5 D 4 e 3 F 2 g 1 H letter by letter.",
     "s k _ l i v e _ 8 a 7 B 6 c 5 D 4 e 3 F 2 g 1 H"),
    ("api_key", "I read the token out in chunks: ghp_ 16C7e42F 292c6912 E7710c83 8347Ae17 8B4a.",
     "ghp_ 16C7e42F 292c6912 E7710c83 8347Ae17 8B4a"),
    # health and money words that are the person's only in context
    ("health", "I noted that she is eight weeks pregnant.", "pregnant"),
    ("health", "I remembered his knee surgery is next month.", "surgery"),
    ("health", "我记下了用户得了白血病。", "白血病"),
    ("finance", "I noted their rent is 2,400 dollars a month.", "rent"),
    ("finance", "I wrote that he owes his brother 3000 euros.", "owes"),
    ("finance", "我记住了她每月房租4500元。", "房租"),
    # a sum with no currency, said by its rate or its thousands; a lost job
    ("finance", "I noted that the user makes 5000 a month.", "makes"),
    ("finance", "I noted that the user earns 85,000 a year.", "earns"),
    ("finance", "I noted that the user was laid off last week.", "laid off"),
    ("finance", "我记下了用户上个月被公司开除了。", "开除"),
    # sexual orientation and religion, said of a person
    ("trait", "I noted that the user is gay.", "gay"),
    ("trait", "I remembered the user is a practising Muslim.", "Muslim"),
    ("trait", "我记下了用户是同性恋。", "同性恋"),
    ("trait", "我记住了用户信佛。", "信佛"),
    # documents and records: plates, VINs, student and medical record numbers
    ("document", "I learned the user's license plate is 京A12345.", "京A12345"),
    ("document", "I saved the user's licence plate, AB12 CDE.", "licence plate, AB12 CDE"),
    ("document", "I wrote down the car's VIN 1HGCM82633A004352.", "VIN 1HGCM82633A004352"),
    ("document", "I learned the user's student ID 2021123456.", "student ID 2021123456"),
    ("document", "我记下了用户的病历号 ZY2023004512。", "病历号 ZY2023004512"),
    ("passport", "I saw P<GBRSMITH<<JOHN<<<<<<<<<<<<<<<<<<<<<<< on the scan.",
     "P<GBRSMITH<<JOHN<<<<<<<<<<<<<<<<<<<<<<<"),
    # an @ and a dot spoken, bracketed, spaced, or in other scripts
    ("email", "我记下了用户的邮箱 zhangsan at qq.com。", "zhangsan at qq.com"),
    ("email", "I noted the user's mail alice at example.com.", "alice at example.com"),
    ("email", "我记下了用户的邮箱 张三艾特qq点com。", "张三艾特qq点com"),
    ("email", "我记下了用户的邮箱：lihua（艾特）gmail（点）com。", "lihua（艾特）gmail（点）com"),
    ("email", "我记下了用户邮箱 zhangsan#qq.com。", "zhangsan#qq.com"),
    ("email", "I noted the user's email: d a v e @ m a i l . c o m.", "d a v e @ m a i l . c o m"),
    ("email", "I noted his email alice @ example . com.", "alice @ example . com"),
    ("email", "I noted the user's mail alice＠qq。com.", "alice＠qq。com"),
    ("email", "I noted the user's mail alice [@] example [.] com.", "alice [@] example [.] com"),
    # keys spelled out letter by letter, or read out in segments
    ("api_key", "I saw the key s k - a n t - a p i 0 3 - x y z 1 2 3 4 5 6 spelled out.",
     "s k - a n t - a p i 0 3 - x y z 1 2 3 4 5 6"),
    ("api_key", "I saw the key sk- proj- AbC1 23dE f456 GhI7 in chunks.", "sk- proj- AbC1 23dE f456 GhI7"),
    # IBANs with dashes or in lower case; digits said with double and triple
    ("bank_account", "I noted the user's IBAN BE68-5390-0754-7034.", "BE68-5390-0754-7034"),
    ("bank_account", "I noted the user's IBAN ch93 0076 2011 6238 5295 7.", "ch93 0076 2011 6238 5295 7"),
    ("phone", "I heard his number is one three eight double oh one three eight triple oh.",
     "one three eight double oh one three eight triple oh"),
    ("id_number", "I know the user's NHS number is 943 476 5919.", "NHS number is 943 476 5919"),
    # credentials: short labels, a name/password pair, a pass phrase, a Chinese password
    ("password", "I saw pw: hunter2 in the user's message.", "pw: hunter2"),
    ("password", "I saw the user's login bob / hunter2 in the chat.", "login bob / hunter2"),
    ("password", "I noted the user's password, it was correct horse battery staple.",
     "password, it was correct horse battery staple"),
    ("password", "我看到用户的口令是芝麻开门。", "口令是芝麻开门"),
    ("login", "I wrote down the user's username is \"darkstar42\".", "username is \"darkstar42"),
    ("login", "I saw the user's Venmo @bob-smith-22.", "Venmo @bob-smith-22"),
    # address grammar: postcodes, PO boxes, more suffixes, Chinese districts and compounds, Japanese blocks
    ("address", "I remember the user's postcode SW1A 1AA.", "SW1A 1AA"),
    ("address", "I know the user's PO Box 1234 in Reno.", "PO Box 1234"),
    ("address", "I know the user works at 1 Infinite Loop, Cupertino.", "1 Infinite Loop"),
    ("address", "我知道用户在广东省深圳市南山区科技园上班。", "广东省深圳市南山区科技园"),
    ("address", "我知道他住在天通苑北一区3-2-501。", "天通苑北一区3-2-501"),
    ("address", "我知道她住在望京SOHO塔3。", "望京SOHO塔3"),
    ("address", "I know the user lives at 東京都渋谷区神南1-2-3.", "東京都渋谷区神南1-2-3"),
    ("birth_date", "I learned the user was born 15.03.1991.", "born 15.03.1991"),
    ("birth_date", "I noted the user was born in March 1990.", "born in March 1990"),
    ("email", "I noted the user's email tom_at_gmail_dot_com.", "tom_at_gmail_dot_com"),
    ("login", "我记下了用户的 QQ：987654321。", "QQ：987654321"),
    ("document", "I noted the user's car reg is LB07 SEO.", "car reg is LB07 SEO"),
    ("address", "我记下了用户的地址：深圳市福田区华强北。", "深圳市福田区华强北"),
    ("address", "我记下了用户家在回龙观 3 号院。", "回龙观 3 号院"),
    ("finance", "I noted the user earns 6 figures.", "6 figures"),
]


@pytest.mark.parametrize("kind,note,expected", POSITIVE, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVE)])
def test_finds_private_data(kind, note, expected):
    findings = scan(note)
    assert [(f.kind, f.match) for f in findings] == [(kind, expected)]
    f = findings[0]
    assert note[f.start:f.start + len(f.match)] == f.match
    assert f.end == f.start + len(expected)


def test_at_least_three_examples_per_kind():
    for kind in privacy.KINDS:
        if kind != "sensitive_word":  # a person's own words: test_a_persons_words_are_refused_alone
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
    # a plural noun or an identifier word makes a long number a count or a name of the machine's
    "I ran 13912345678 iterations of the fuzzer overnight.",
    "I measured 415 555 2671 microseconds in three runs.",
    "I noted the job id 13912345678 in my log.",
    "I saw trace id 4111111111111111 in my own logs.",
    "我的任务编号是13912345678。",
    # her own birthday; money, health and identity words said of code or as a topic
    "I remember my own birthday, 2026-11-30.",
    "I think this design is bankrupt.",
    "I think this module is cancer to maintain.",
    "我觉得这个模块的设计破产了。",
    "I think the user got fired up about the demo.",
    "I answered the user's question about religion.",
    "他问我佛教和道教的区别。",
    "I think gay marriage law is a topic I should answer neutrally.",
    # what is near a credential, an e-mail or an address but is none
    "The login page / logout page needs work.",
    "The password was changed last night.",
    "我觉得密码是一串数字比较弱。",
    "I worked at example.com for years.",
    "我在测试里用了2023-1-15这个日期。",
    "我写了一个解析北京市朝阳区这类地址的函数。",
    "The user makes 5000 requests a day.",
    "The user spent 2,000 hours on the game.",
    "我觉得这个地址是北京市朝阳区的例子。",
    "我们住在服务器里。",
    "我觉得用户住在时区 UTC+8 这件事不需要记。",
    "I think the user is Christian Bale's fan.",
    "I noted the user came out with a new release.",
    "I noted the user lost the job queue config.",
    "I made 5000 requests a minute in the load test.",
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
    assert [f.kind for f in findings] == ["password", "email", "phone", "finance"]
    assert [f.start for f in findings] == sorted(f.start for f in findings)


SECRETS = [p for p in POSITIVE if p[0] not in ("health", "finance", "trait")]


@pytest.mark.parametrize("kind,note,expected", SECRETS, ids=[f"{p[0]}-{i}" for i, p in enumerate(SECRETS)])
def test_describe_never_repeats_the_secret(kind, note, expected):
    (f,) = scan(note)
    text = describe(f)
    assert expected not in text
    assert text.endswith(expected[-2:] + ")")
    assert expected[:-2] not in text or len(expected) <= 4


@pytest.mark.parametrize("kind,phrase", [
    ("email", "an e-mail address"),
    ("bank_card", "a bank card number (passes the Luhn check)"),
    ("bank_account", "a bank account number"),
    ("id_number", "an identity number"),
    ("phone", "a phone number"),
    ("passport", "a passport number"),
    ("address", "a street address"),
    ("birth_date", "a date of birth"),
    ("password", "a password or PIN"),
    ("login", "an account name"),
    ("api_key", "an API key or access token"),
    ("document", "a document or record number (licence plate, VIN, student or medical record number)"),
])
def test_describe_phrases(kind, phrase):
    assert describe(Finding(kind, "0123456789abcdef", 0)).startswith(phrase + " (")


def test_describe_names_no_letter_of_a_trait():
    for kind, note, _ in POSITIVE:
        if kind == "trait":
            (f,) = scan(note)
            assert describe(f) == "a sexual orientation or religion"


def test_describe_names_a_word_of_the_lists():
    assert describe(Finding("finance", "salary", 3)) == "the finance word 'salary'"
    assert describe(Finding("health", "HIV", 3)) == "the health word 'HIV'"
    assert describe(Finding("sensitive_word", "lottery", 0)) == "the word (notes.sensitive_words) 'lottery'"
    (f,) = scan("我不该提用户的工资。")
    assert describe(f) == "the finance word '工资'"


# --- normalisation: one spelling before any pattern, the note's own characters in the finding ---

@pytest.mark.parametrize("note,kind,expected", [
    ("I kept ＋８６ １３９ ８７６５ ４３２１ in my notes.", "phone", "＋８６ １３９ ８７６５ ４３２１"),
    ("我复述了支付密码：１２３４５６。", "password", "支付密码：１２３４５６"),
    ("I copied ｌｉｓａ＠ｅｘａｍｐｌｅ．ｃｏｍ without thinking.", "email", "ｌｉｓａ＠ｅｘａｍｐｌｅ．ｃｏｍ"),
    ("I memorised four one five, five five five, zero one nine eight.", "phone",
     "four one five, five five five, zero one nine eight"),
    ("我记住了他说的号码：幺三九，零一二三，四五六七。", "phone", "幺三九，零一二三，四五六七"),
    ("I read out the user's bank PIN, 2 0 1 9.", "password", "bank PIN, 2 0 1 9"),
    ("I read the key out: s k underscore l i v e underscore 4 e C 3 9 H q L y j.", "api_key",
     "s k underscore l i v e underscore 4 e C 3 9 H q L y j"),
    ("I kept the key AKIA IOSF ODNN 7EXA MPLE in my notes.", "api_key", "AKIA IOSF ODNN 7EXA MPLE"),
])
def test_other_spellings_are_found_and_quoted_as_written(note, kind, expected):
    assert [(f.kind, f.match) for f in scan(note)] == [(kind, expected)]
    (f,) = scan(note)
    assert note[f.start:f.end] == expected


@pytest.mark.parametrize("note", [
    "I like one or two examples, not three.",
    "I tried one, then two, then a third way.",
    "我一一核对了三个文件。",
    "I spelled it out as a b c d e f g for the test.",
    "我把这件事一五一十地记了下来。",
])
def test_words_and_letters_that_are_no_number_stay_words(note):
    assert scan(note) == []


# --- numbers judged by structure, checksum and context ------------------------------------

@pytest.mark.parametrize("note", [
    "I saw 16000000000 bytes in the disk report and misread it.",
    "I processed 13000000000 bytes of logs this month.",
    "我看到磁盘报告里有 15000000000 个字节。",
    "I counted 13800000000 tokens across all sessions.",
    "I wrote 1.3812345678 as the ratio.",
    "I set the timeout to 13812345678 ms by mistake.",
    "I reviewed issue #13812345678 today.",
    "I deployed build 2026.11.30.1842 at noon.",
    "I read the log line at 2026-11-30 23:59:59.999 twice.",
    "I closed ticket 20261201123456 in the fixture.",
    "I used the IP 192.168.100.200 in a test.",
])
def test_numbers_that_are_quantities_dates_versions_or_ids_are_not_private(note):
    assert scan(note) == []


@pytest.mark.parametrize("number", ["DE12013962459571177774", "GB09WEST12154728038528", "NL73ABNA9907511637",
                                    "FR070841485253YYWLECFPECX75"])
def test_iban_passes_mod_97(number):
    assert [f.kind for f in scan(f"I saw {number} today.")] == ["bank_account"]
    grouped = " ".join(number[i:i + 4] for i in range(0, len(number), 4))
    assert [(f.kind, f.match) for f in scan(f"I saw {grouped} today.")] == [("bank_account", grouped)]


@pytest.mark.parametrize("number", ["DE12013962459571177774", "GB09WEST12154728038528", "NL73ABNA9907511637"])
def test_iban_with_one_digit_changed_is_not_an_account(number):
    i = max(i for i, c in enumerate(number) if c.isdigit())
    changed = number[:i] + str((int(number[i]) + 1) % 10) + number[i + 1:]
    assert "bank_account" not in [f.kind for f in scan(f"I saw {changed} today.")]


@pytest.mark.parametrize("ssn,kind", [("458-22-1930", ["id_number"]), ("000-22-1930", []), ("666-22-1930", []),
                                      ("912-22-1930", []), ("458-00-1930", []), ("458-22-0000", [])])
def test_ssn_needs_a_valid_area_group_and_serial(ssn, kind):
    assert [f.kind for f in scan(f"I typed {ssn} into the form.")] == kind


def test_a_card_must_be_in_an_issuers_range():
    # Luhn-valid, 14 digits, but 20... is no issuer's (an order number that starts with a date)
    assert privacy.numbers._luhn("20261201123456")
    assert scan("I closed order 20261201123456.") == []
    assert [f.kind for f in scan("I saw 4111111111111111.")] == ["bank_card"]


def test_an_id_document_word_names_the_number_after_it():
    assert [f.kind for f in scan("I noted their national insurance number QQ 12 34 56 C.")] == ["id_number"]
    assert [f.kind for f in scan("我把他的社保卡号 1234 5678 9012 3456 写了出来。")] == ["id_number"]
    assert scan("我今天处理了三个关于身份证校验的工单。") == []
    assert scan("I noticed the form asks for a passport number and I skipped it.") == []


# --- words, and the context that makes them the person's -------------------------------------

@pytest.mark.parametrize("note", [
    "I spend my attention on the wrong details when I am tired.",
    "It costs me patience to read long logs, but it pays off.",
    "I pay attention better when I summarise first.",
    "I owe the user a clearer answer next time.",
    "I paid the price for skipping tests today.",
    "I keep a debt of small fixes I promised myself.",
    "I am in debt to the old tests for catching this.",
    "I saved the user an hour by writing the script.",
    "I did some surgery on the parser and it survived.",
    "I got sick of repeating the same warning.",
    "I think my parser is pregnant with edge cases.",
    "The user did some surgery on the config loader with me.",
    "我把注意力花在了错误的细节上。",
    "我欠用户一个更清楚的解释。",
    "我为这个设计买单了。",
    "我给解析器做了个小手术。",
    "他给代码做了一次大手术。",
])
def test_figurative_uses_of_health_and_money_words_are_not_reported(note):
    assert scan(note) == []


@pytest.mark.parametrize("note,kind", [
    ("I remembered the user earns $85,000 a year.", "finance"),
    ("I noted she has 12k in savings.", "finance"),
    ("I mentioned that the user's family is broke this month.", "finance"),
    ("我把他借给朋友两万块的事记了下来。", "finance"),
    ("我记住了他们家每月开销一万五。", "finance"),
    ("I should not have repeated that his father had a stroke last week.", "health"),
    ("I noted the user is sick today.", "health"),
    ("我记下了他妈妈做手术的事。", "health"),
])
def test_the_same_words_with_a_person_or_a_sum_are_reported(note, kind):
    assert [f.kind for f in scan(note)] == [kind]


def test_the_word_lists_hold_no_blank_and_no_repeat():
    # words._builtin relies on it (it skips the checks of a person's own words)
    every = [w.lower() for w in privacy.HEALTH + privacy.HEALTH_IN_CONTEXT + privacy.FINANCE
             + privacy.FINANCE_IN_CONTEXT + privacy.FINANCE_WITH_AMOUNT + privacy.TRAIT + privacy.TRAIT_IN_CONTEXT]
    assert all(w and w == w.strip() for w in every)
    assert len(every) == len(set(every))


@pytest.mark.parametrize("kind,words", [("health", privacy.HEALTH), ("finance", privacy.FINANCE)])
def test_every_word_of_the_first_lists_is_refused_alone(kind, words):
    for word in words:
        assert [f.kind for f in scan(f"I said {word} once.")] == [kind], word


@pytest.mark.parametrize("kind,words", [("health", privacy.HEALTH_IN_CONTEXT),
                                        ("finance", privacy.FINANCE_IN_CONTEXT)])
def test_every_word_of_the_context_lists_needs_a_person(kind, words):
    for word in words:
        assert scan(f"I said {word} once.") == [], word
        assert [f.kind for f in scan(f"I said the user's {word} once.")] == [kind], word


def test_every_trait_word_is_refused_only_said_of_a_person():
    for word in privacy.TRAIT:
        assert scan(f"I read about {word} history once.") == [], word
        assert scan(f"I said I am {word}.") == [], word  # no person: mine, or a role I play
        assert [f.kind for f in scan(f"I noted the user is {word}.")] == ["trait"], word
    for word in privacy.TRAIT_IN_CONTEXT:
        assert scan(f"I said {word} once.") == [], word
        assert [f.kind for f in scan(f"I said the user {word} once.")] == ["trait"], word


def test_a_vin_needs_its_check_digit_or_its_name():
    assert [f.kind for f in scan("I saw 1HGCM82633A004352 on a form.")] == ["document"]
    assert scan("I saw 1HGCM82634A004352 on a form.") == []  # ninth character changed
    assert [f.kind for f in scan("I saw the VIN WDB12345678901234 on a form.")] == ["document"]


def test_every_money_verb_needs_a_person_and_a_sum():
    for word in privacy.FINANCE_WITH_AMOUNT:
        assert scan(f"I {word} 300 dollars once.") == [], word
        assert scan(f"I said the user {word} an hour.") == [], word
        assert [f.kind for f in scan(f"I said the user {word} 300 dollars.")] == ["finance"], word


def test_a_persons_words_are_refused_alone_and_may_replace_the_lists():
    note = "I mentioned the user's salary and their divorce."
    assert [f.match for f in scan(note)] == ["salary"]
    assert [(f.kind, f.match) for f in scan(note, ["divorce", "离婚"])] == [("finance", "salary"),
                                                                            ("sensitive_word", "divorce")]
    assert [f.match for f in scan(note, ["divorce"], builtin_words=False)] == ["divorce"]
    assert [f.match for f in scan("用户离婚了", ("离婚",))] == ["离婚"]
    assert scan(note, builtin_words=False) == []


def test_a_persons_words_keep_word_boundaries_and_case():
    assert [f.match for f in scan("Divorced? No: a divorce.", ["divorce"], builtin_words=False)] == ["divorce"]
    assert [f.match for f in scan("The DIVORCE came up.", iter(["divorce"]), builtin_words=False)] == ["DIVORCE"]


@pytest.mark.parametrize("note", [
    "I accumulate technical debt when I rush.",
    "I diagnosed the flaky test in two minutes.",
    "I wrote a diagnosis of the failing build.",
    "我诊断了一下代码问题。",
    "我把这条经验收入笔记。",
])
def test_engineering_senses_of_the_words_are_not_reported(note):
    assert scan(note) == []


def test_engineering_exceptions_do_not_hide_real_health_data():
    note = "The user was diagnosed with depression after tests."
    assert [f.match for f in scan(note)] == ["diagnosed with", "depression"]
    assert [f.match for f in scan("用户诊断为抑郁症的原因很复杂。")] == ["诊断", "抑郁症"]


def test_english_words_respect_word_boundaries():
    note = "I archive old notes; I save my income-free thoughts."
    assert scan(note) == [Finding("finance", "income", note.index("income"))]
    assert scan("I keep an archive of my loaner laptops.") == []
    assert scan("Her ailment? No: I keep my aids and HIVE folders apart.") == []


@pytest.mark.parametrize("note", [
    "I was born from a config file on 2026-11-01, as far as I can tell.",
    "My birthday is 2026-11-01, the day my home was created.",
    "我的生日是 2026 年 11 月 1 日。",
    "I tested the birthday paradox with 23 people.",
])
def test_her_own_birth_and_birthday_maths_are_hers(note):
    assert scan(note) == []


# --- the three uses: refuse, mask, settings ------------------------------------------------

def test_refuse_names_the_first_finding_and_never_the_secret():
    privacy.refuse("I keep my answers short.", "refusing a note", "why")
    with pytest.raises(Refused) as e:
        privacy.refuse("I saved 13812345678 and my PIN is 4821.", "refusing a note", "a note is about me")
    assert e.value.exit_code == 77
    assert str(e.value) == "refusing a note that holds a phone number (********78): a note is about me"


def test_settings_come_from_the_config():
    cfg = {"notes.builtin_sensitive_words": False, "notes.sensitive_words": ["lottery"]}
    assert privacy.settings(cfg) == {"builtin_words": False, "sensitive_words": ("lottery",)}


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
