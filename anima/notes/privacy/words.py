"""Health and money: words, and the context that makes them the person's.

Some words name a person's health or finances whatever surrounds them (chemotherapy, HIV,
salary, mortgage, 化疗, 房贷): these are refused on their own. Others are used figuratively
as often as not ("I spend my attention", "it costs me patience", "surgery on the parser", "我为
这个设计买单"), so they count only in context, in the same sentence:

- a health word of the second list, with a person other than me (the user, he, she, they,
  their, a mother, a friend, Alice's, 用户, 他, 她, 对方, 妈妈, ...), and no piece of software
  beside it (code, parser, test, build, 代码, 模块, ...);
- a money noun of the second list (money, rent, debt, savings, 钱, 房租, 股票, ...), with a person;
- a money verb (earn, pay, spend, owe, borrow, lose, 花了, 欠, 借给, 赚, ...), with a person and a
  sum of money ($85,000, 2,400 dollars, 12k, ¥50,000, 4500元, 两万块, 三十万; or with no currency,
  by its rate or its thousands: 5000 a month, 85,000 a year);
- a word of orientation or religion (gay, Muslim, 同性恋, 基督徒, ...) said of a person: after a
  copula or a verb of becoming ("the user is gay", 用户是穆斯林), never as a topic ("a question
  about religion"); a phrase that says it by itself (came out, 信佛, 去教堂) beside a person.

A word of the first health list said of code with no person by it ("this module is cancer to
maintain") is figurative, and so is "fired up" ("the user got fired up about the demo").

English words match as whole words in any case (a plural too), phrases with any white space
between their words, acronyms (HIV, ADHD) in capitals only; Chinese words match anywhere. A few
everyday phrases are never counted: technical debt, diagnosing a bug, 诊断问题, 收入笔记, pay
attention, sick of.
"""

import re

from anima.notes.privacy.text import lazy

HEALTH = (
    # en: conditions, treatments, drugs and tests that are a person's health whatever surrounds them
    "cancer", "tumor", "tumour", "leukemia", "leukaemia", "lymphoma", "melanoma", "carcinoma", "chemo",
    "chemotherapy", "radiotherapy", "radiation therapy", "immunotherapy", "HIV", "AIDS", "diabetes", "diabetic",
    "insulin", "metformin", "asthma", "asthmatic", "inhaler", "epilepsy", "epileptic", "seizure", "dementia",
    "Alzheimer's", "Parkinson's", "autism", "autistic", "ADHD", "dyslexia", "Tourette", "bipolar", "schizophrenia",
    "schizophrenic", "OCD", "PTSD", "depression", "antidepressant", "SSRI", "sertraline", "fluoxetine", "Prozac",
    "Zoloft", "Xanax", "Lexapro", "anxiety disorder", "panic attack", "eating disorder", "anorexia", "anorexic",
    "bulimia", "bulimic", "suicidal", "suicide", "self-harm", "self harm", "alcoholic", "alcoholism", "methadone",
    "overdose", "rehab", "miscarriage", "stillbirth", "abortion", "pregnancy", "IVF", "fertility treatment",
    "infertility", "endometriosis", "PCOS", "postpartum", "C-section", "menopause", "menstrual", "vasectomy",
    "hysterectomy", "mastectomy", "hepatitis", "tuberculosis", "pneumonia", "COVID", "long COVID", "herpes",
    "chlamydia", "gonorrhea", "syphilis", "HPV", "STD", "STI", "cholesterol", "statin", "blood pressure",
    "blood sugar", "blood type", "blood test", "hypertension", "heart disease", "heart condition", "cardiac",
    "arrhythmia", "angina", "pacemaker", "psychiatrist", "psychiatric", "mental illness", "nervous breakdown",
    "colonoscopy", "biopsy", "mammogram", "dialysis", "migraine", "arthritis", "lupus", "multiple sclerosis",
    "sclerosis", "scoliosis", "osteoporosis", "kidney stone", "gout", "ulcer", "hernia", "concussion", "cataract",
    "glaucoma", "anemia", "anaemia", "thyroid", "celiac", "coeliac", "Crohn's", "IBS", "eczema", "psoriasis",
    "obesity", "Ozempic", "antibiotic", "penicillin", "prescription", "painkiller", "sleeping pill", "opioid",
    "chronic pain", "sleep apnea", "narcolepsy", "hearing aid", "wheelchair", "amputation", "prosthetic",
    "terminal illness", "palliative", "hospice", "sick leave", "hospitalised", "hospitalized", "diagnosed with",
    "cyst", "polyp", "vaccine injury",
    # zh
    "癌", "肿瘤", "白血病", "淋巴瘤", "化疗", "放疗", "艾滋", "糖尿病", "胰岛素", "二甲双胍", "哮喘", "癫痫", "痴呆",
    "老年痴呆", "阿尔茨海默", "阿兹海默", "帕金森", "自闭症", "孤独症", "多动症", "双相", "躁郁", "精神分裂",
    "抑郁症", "焦虑症", "强迫症", "惊恐发作", "创伤后", "厌食症", "暴食症", "自杀", "自残", "轻生", "酗酒", "戒酒",
    "戒毒", "毒瘾", "成瘾", "精神病", "精神疾病", "心理疾病", "心理医生", "精神科", "心理咨询", "心理治疗", "流产",
    "堕胎", "人流", "怀孕", "孕检", "孕期", "产检", "不孕", "试管婴儿", "剖腹产", "产后抑郁", "坐月子", "月经",
    "经期", "更年期", "子宫", "卵巢", "前列腺", "乳腺", "结节", "抗抑郁", "抗焦虑", "抗精神病", "舍曲林",
    "百忧解", "透析", "尿毒症",
    "乙肝", "肝炎", "脂肪肝", "结核", "肺炎", "新冠", "疱疹", "梅毒", "淋病", "性传播", "胆固醇", "高血压", "低血压",
    "血压", "血糖", "血型", "心脏病", "心梗", "心衰", "心律不齐", "起搏器", "中风", "脑梗", "搭桥", "偏头痛",
    "关节炎", "红斑狼疮", "痛风", "溃疡", "疝气", "脑震荡", "白内障", "青光眼", "贫血", "甲状腺", "湿疹", "牛皮癣",
    "银屑病", "肥胖症", "减肥药", "抗生素", "青霉素", "安眠药", "降压药", "止痛药", "处方", "药方", "吃的药", "用药",
    "打针", "输液", "挂水", "化验", "化验单", "病理", "活检", "体检报告", "器官移植", "骨髓移植", "肾移植", "肾结石",
    "胃炎", "肠炎", "痔疮", "骨质疏松", "脊柱侧弯", "助听器", "截肢", "残疾", "确诊", "病史", "病情", "病历", "病假",
    "患有", "住院", "出院",
)
HEALTH_IN_CONTEXT = (
    # en: also said of code, of work, of feelings: they count beside a person and no software
    "surgery", "therapy", "therapist", "hospital", "clinic", "doctor", "nurse", "sick", "sickness", "illness",
    "pain", "injury", "injured", "allergy", "allergic", "pregnant", "diagnosed", "diagnosis", "symptom",
    "medication", "meds", "pills", "stroke", "heart attack", "had a breakdown", "insomnia", "fever", "flu",
    "infection", "headache", "depressed", "anxiety", "mental health", "MRI", "X-ray", "epidural", "ultrasound",
    "transplant", "addiction", "relapse", "stutter", "paralysed", "paralyzed",
    # zh
    "手术", "生病", "病了", "看病", "医院", "医生", "治疗", "过敏", "失眠", "头疼", "头痛", "发烧", "感冒", "吃药",
    "药物", "体检", "受伤", "骨折", "疼痛", "诊断", "抑郁", "症状", "服用", "慢性病", "心理问题", "瘫痪", "移植",
    "复查",
)
FINANCE = (
    # en: what names a person's finances whatever surrounds it
    "salary", "paycheck", "paycheque", "payslip", "pay stub", "pay rise", "pay cut", "income", "mortgage",
    "credit score", "credit rating", "credit card debt", "credit card bill", "bank balance", "account balance",
    "bank statement", "savings account", "checking account", "net worth", "bankruptcy", "insolvent",
    "insolvency", "overdraft", "overdrawn", "arrears", "student loan", "student debt", "payday loan", "loan shark",
    "debt collector", "tax return", "tax refund", "tax bill", "tax debt", "pension", "401(k)", "stock options",
    "RSUs", "alimony", "child support", "gambling losses", "gambling debt", "foreclosure", "eviction",
    "repossession", "bailiff", "paycheck to paycheck", "behind on payments", "unpaid bills", "food stamps",
    # zh
    "工资", "工资条", "工资卡", "月薪", "年薪", "薪水", "薪资", "薪酬", "底薪", "欠薪", "降薪", "涨薪", "加薪",
    "年终奖", "月收入", "年收入", "收入", "房贷", "车贷", "网贷", "月供", "按揭", "贷款", "高利贷", "催收", "欠款",
    "欠债", "欠钱", "借钱", "还款", "分期付款", "负债", "债务", "赌债", "信用分", "征信", "信用卡账单", "存款",
    "存折", "银行流水", "公积金", "退休金", "养老金", "失业金", "低保", "个税", "负资产", "资不抵债", "理财",
    "理财产品", "炒股", "爆仓", "套牢", "网赌", "花呗", "借呗",
)
FINANCE_IN_CONTEXT = (
    # en: nouns and states that are money; they count beside a person
    "money", "cash", "rent", "debt", "loan", "savings", "earnings", "bonus", "bills", "fees", "finances",
    "financial", "crypto", "bitcoin", "stocks", "investments", "inheritance", "allowance", "wealthy", "wages",
    "hourly rate", "tuition", "lottery", "casino", "gambling", "welfare", "dividends", "payroll", "credit limit",
    "poverty", "unemployed", "is broke", "was broke", "are broke", "were broke", "go broke", "went broke",
    "flat broke", "bankrupt", "six figures", "6 figures", "seven figures", "six-figure", "seven-figure",
    # losing one's job is losing one's income
    "got fired", "was fired", "been fired", "were fired", "get fired", "is fired", "laid off", "got sacked",
    "was sacked", "out of a job", "jobless", "out of work", "made redundant",
    # zh
    "钱", "没钱", "缺钱", "有钱", "富有", "穷", "房租", "租金", "开销", "花销", "余额", "股票", "基金", "账单",
    "奖金", "积蓄", "财务", "首付", "房产", "资产", "身家", "逾期", "彩票", "赌博", "失业", "下岗", "裁员", "补助",
    "亏损", "遗产", "透支", "经济状况", "经济困难", "破产", "开除", "辞退", "解雇", "被裁", "炒鱿鱼", "丢了工作",
    "失去工作",
)
TRAIT = (
    # en: sexual orientation and gender identity, religion; they count said of a person ("the user is
    # gay", "she is a practising Muslim"), not as a topic ("a question about religion")
    "gay", "lesbian", "bisexual", "homosexual", "pansexual", "asexual", "queer", "transgender", "trans woman",
    "trans man", "non-binary", "nonbinary", "Muslim", "Christian", "Catholic", "Protestant", "Jewish", "Buddhist",
    "Hindu", "Sikh", "Mormon", "atheist", "agnostic", "evangelical",
    # zh
    "同性恋", "双性恋", "跨性别", "变性人", "拉拉", "男同", "女同", "基督徒", "天主教徒", "穆斯林", "佛教徒", "佛教",
    "基督教", "天主教", "伊斯兰教", "犹太教", "印度教", "无神论者",
)
TRAIT_IN_CONTEXT = (
    # what says it of a person by itself; they count beside one
    "came out as", "came out to", "in the closet", "sexual orientation", "converted to", "goes to church",
    "go to church", "went to church", "attends church", "goes to mosque", "goes to synagogue", "prays five times",
    "出柜", "性取向", "信佛", "信教", "信主", "信基督", "皈依", "受洗", "去教堂", "做礼拜", "去清真寺", "宗教信仰",
)
FINANCE_WITH_AMOUNT = (
    # en: verbs that move money; they count with a sum of money and a person
    "earn", "earns", "earned", "earning", "makes", "made", "pay", "pays", "paid", "paying", "spend", "spends",
    "spent", "spending", "owe", "owes", "owed", "owing", "borrow", "borrows", "borrowed", "lend", "lends", "lent",
    "lost", "lose", "loses", "invest", "invests", "invested", "costs", "cost", "saved", "saves", "won", "charged",
    # zh
    "花了", "花掉", "欠", "借", "亏", "赚", "挣", "付了", "还了", "交了", "损失", "拿了", "收到",
)

_PERSON = lazy(
    r"(?<![A-Za-z])(?:the users?|users?(?:'s|')?|he|him|his|she|her|hers|they|them|their|theirs|someone|"
    r"mother|mom|mum|father|dad|parents?|wife|husband|partner|son|daughter|brother|sister|family|friends?|boss"
    r"|colleagues?|clients?|customers?|girlfriend|boyfriend|grandma|grandpa|grandmother|grandfather|uncle|aunt"
    r"|cousin|kids?|child|children|baby|mr|mrs)(?![A-Za-z])"
    r"|(?<![A-Za-z])(?-i:[A-Z][a-z]+)'s(?![A-Za-z])"
    r"|用户|(?<![其吉])他|她|对方|家人|家里|父母|妈妈|母亲|爸爸|父亲|老婆|妻子|丈夫|老公|孩子|儿子|女儿|朋友|老板"
    r"|同事|客户|男友|女友|男朋友|女朋友|哥哥|姐姐|弟弟|妹妹|奶奶|爷爷|外婆|外公", re.I)
_AMOUNT = lazy(
    r"(?:[$£€¥￥]|(?<![A-Za-z])(?:US|HK|A|C|NZ|S)\$|(?<![A-Za-z])(?:RMB|CNY|USD|EUR|GBP|JPY)\s?)\s?\d[\d,]*(?:\.\d+)?"
    r"|(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:k|m|million|billion|thousand|grand)?\s?(?:dollars?|bucks|euros?|pounds?"
    r"|quid|yuan|rmb|usd|eur|gbp|cny|yen|rupees?|francs?)(?![A-Za-z])"
    r"|(?<![\w.])\d+(?:\.\d+)?[kK](?![\w])"
    r"|(?:\d[\d,]*(?:\.\d+)?|[一二两三四五六七八九十][零一二两三四五六七八九十百千]*) ?(?:[万千百] ?)?"
    r"(?:元|块钱|块|美元|欧元|英镑|港币|日元|刀)"
    r"|(?:\d+(?:\.\d+)?|[一二两三四五六七八九十][零一二两三四五六七八九十百]*) ?[万千](?![米字个条行次人年天里])", re.I)
# a sum said with no currency: by its rate (5000 a month, 85k per year) or its thousands (85,000)
# where no unit follows it
_BARE_AMOUNT = lazy(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?k?\s+(?:a|an|per|each|every)\s+(?:month|year|week|hour|day|annum)\b"
    r"|(?<![\w.])\d[\d,]*k?\s?/\s?(?:month|mo|year|yr|hour|hr|week|wk)\b"
    r"|(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\d,])(?=\s*(?:$|[.,;!?)]|(?:a|an|per|on|in|to|from|for|and|or|last|this"
    r"|each|every|after|before|at|with|over|since|by|until)\b))", re.I)
_CURRENCY_WORDS = ("dollar", "buck", "euro", "pound", "quid", "yuan", "rmb", "usd", "eur", "gbp", "cny", "jpy", "yen",
                   "rupee", "franc", "grand", "刀")
_SOFTWARE = lazy(
    r"(?<![A-Za-z])(?:code|codebase|parser|bugs?|tests?|builds?|modules?|config|functions?|files?|repo|branch"
    r"|merge|database|server|api|loader|script|commits?|pipeline|deploy|service|system|app|class|refactor)"
    r"(?![A-Za-z])|代码|解析器|模块|配置|函数|测试|项目|仓库|分支|数据库|服务器|系统|程序|接口|需求", re.I)
_FIGURATIVE = lazy(
    r"\b(?:technical|tech|design|documentation|test)\s+debts?\b"
    r"|\bdiagnos(?:e|ed|es|ing|is)\s+(?:of\s+)?(?:(?:the|a|an|this|that|these|those|my|its|their|our|your|his|her"
    r"|user's|one|two|another|same|flaky|failing|broken|slow|intermittent|root)\s+){0,3}"
    r"(?:bugs?|errors?|issues?|problems?|failures?|crash(?:es)?|tests?|builds?|code|regressions?|root cause|logs?)\b"
    r"|诊断(?:出|了|一下|下|这个|那个|这些|了一下)*(?:问题|错误|故障|bug|代码|日志|原因|报错|失败|工具|性能)"
    r"|(?:问题|错误|故障|bug|代码|日志|报错|性能)诊断"
    r"|收入(?:到)?(?:笔记|囊中|记忆|清单|列表|文档|索引)"
    r"|\b(?:pay|pays|paid|paying)\s+(?:\w+\s+)?attention\b|\bsick\s+(?:of|and\s+tired)\b|\bpain\s+points?\b"
    r"|\bgrowing\s+pains\b|\bpregnant\s+(?:pause|with)\b|值钱"
    r"|\b(?:got|get|gets|was|were|is|been)\s+fired\s+(?:up|off|back|at|on)\b", re.I)

# the words of code only (not "test", not "system": a blood test, the immune system), for the words
# that are health wherever they stand but for a piece of code ("this module is cancer to maintain")
_CODE = lazy(
    r"(?<![A-Za-z])(?:code|codebase|parser|bugs?|modules?|config|functions?|repo|branch|database|server|api"
    r"|loader|scripts?|commits?|pipeline|deploy|class|refactor|design|architecture|framework|library|dependency"
    r"|legacy|project)(?![A-Za-z])|代码|解析器|模块|配置|函数|仓库|分支|数据库|服务器|程序|接口|架构|框架|设计"
    r"|项目", re.I)
_CAPITALS = frozenset(w for w in HEALTH + HEALTH_IN_CONTEXT if w.isupper())
_word_regexes: dict[str, re.Pattern] = {}


def _needles(words, kind: str, tier: str):
    """(first token lower-cased, word, kind, tier) for each distinct non-blank word."""
    seen, out = set(), []
    for word in words:
        word = word.strip() if isinstance(word, str) else ""
        if word and word.lower() not in seen:
            seen.add(word.lower())
            out.append((word.partition(" ")[0].lower(), word, kind, tier))
    return tuple(out)


def _builtin(words, kind: str, tier: str):
    """_needles for the lists above, which hold no blank and no repeat (tests/test_privacy.py
    checks): this runs on every `note add`."""
    return tuple((word.partition(" ")[0].lower(), word, kind, tier) for word in words)


class Needles:
    """Word list entries (word, kind, tier), indexed for a note: English words by their first word,
    lower-cased (a note's own words are looked up, plurals stemmed); those with a sign in their
    first word (Alzheimer's, 401(k), X-ray) and the Chinese ones by a substring test."""

    __slots__ = ("by_word", "by_substring", "chinese")

    def __init__(self, entries):
        self.by_word: dict[str, list] = {}
        self.by_substring, self.chinese = [], []
        for needle, word, kind, tier in entries:
            if not needle.isascii():
                self.chinese.append((needle, word, kind, tier))
            elif needle.isalnum():
                self.by_word.setdefault(needle, []).append((word, kind, tier))
            else:
                self.by_substring.append((needle, word, kind, tier))

    def __add__(self, other):
        joined = Needles(())
        for part in (self, other):
            for needle, entries in part.by_word.items():
                joined.by_word.setdefault(needle, []).extend(entries)
            joined.by_substring += part.by_substring
            joined.chinese += part.chinese
        return joined

    def __bool__(self):
        return bool(self.by_word or self.by_substring or self.chinese)

    def found_in(self, t):
        """The entries whose first word the note holds: the candidates for their regexes."""
        lower = t.lower
        out = []
        for w in t.words:
            if w.isascii():
                for stem in (w, w[:-1], w[:-2], w[:-3] + "y"):
                    out += self.by_word.get(stem, ())
        out += [(word, kind, tier) for needle, word, kind, tier in self.by_substring if needle in lower]
        if not lower.isascii():
            out += [(word, kind, tier) for needle, word, kind, tier in self.chinese if needle in lower]
        return out


BUILTIN = Needles(_builtin(HEALTH, "health", "alone") + _builtin(HEALTH_IN_CONTEXT, "health", "person")
                  + _builtin(FINANCE, "finance", "alone") + _builtin(FINANCE_IN_CONTEXT, "finance", "person")
                  + _builtin(FINANCE_WITH_AMOUNT, "finance", "amount") + _builtin(TRAIT, "trait", "said")
                  + _builtin(TRAIT_IN_CONTEXT, "trait", "person"))
NONE = Needles(())


def extra(words) -> Needles:
    """The needles of a person's own words (notes.sensitive_words): each refused on its own."""
    return Needles(_needles(words, "sensitive_word", "alone"))


def _word_regex(word: str) -> re.Pattern:
    """The word as a whole word (a plural too: salary, salaries; tumor, tumors), white space of
    any length between the words of a phrase; an acronym in capitals only. Compiled once, when a
    note first holds its first token."""
    pattern = _word_regexes.get(word)
    if pattern is None:
        pieces = [re.escape(piece) for piece in word.split()]
        last = word.split()[-1]
        if last.isascii() and last[-1:].isalpha() and not last.isupper():
            pieces[-1] = (re.escape(last[:-1]) + "(?:y|ies)") if last.endswith("y") else pieces[-1] + "(?:s|es)?"
        body = r"\s+".join(pieces)
        head = r"(?<![A-Za-z0-9])" if word[0].isascii() and word[0].isalnum() else ""
        tail = r"(?![A-Za-z0-9])" if word[-1].isascii() and (word[-1].isalnum() or word[-1] == ")") else ""
        flags = 0 if word in _CAPITALS else re.IGNORECASE
        if len(_word_regexes) >= 1024:
            _word_regexes.clear()
        pattern = _word_regexes[word] = re.compile(head + body + tail, flags)
    return pattern


def scan(t, needles: Needles, out: list) -> None:
    text = t.norm
    figurative = None
    for word, kind, tier in dict.fromkeys(needles.found_in(t)):
        for m in _word_regex(word).finditer(text):
            if tier != "alone" and not _in_context(t, m, kind, tier):
                continue
            if tier == "alone" and kind == "health" and _of_software(t, m):
                continue
            if figurative is None:
                figurative = [f.span() for f in _FIGURATIVE.finditer(text)]
            if any(a <= m.start() and m.end() <= b for a, b in figurative):
                continue
            out.append((m.start(), m.end(), kind))


# what makes a trait word a statement about someone: a copula or a verb of becoming before it
_SAID = lazy(r"(?:\b(?:is|am|are|was|were|being|been|be|became|become|identifies as|came out as|raised)\s+"
             r"(?:(?:a|an|not|also|openly|quietly|secretly|devout|devoutly|practising|practicing|lapsed|born|strict"
             r"|proud|convert|new|\w+ly)\s+){0,3}"
             r"|(?:是|信|信仰|皈依|成了|属于|变成)(?:个|一个|一名|名|位|一位|虔诚的|虔诚)?)$", re.I)


_NAME_AFTER = lazy(r"\s+[A-Z][a-z]+(?:'s)?\b")


def _in_context(t, m, kind: str, tier: str) -> bool:
    start, end = t.sentence(m.start())
    sentence = t.norm[start:end]
    if tier == "said":
        if _NAME_AFTER.match(t.norm, m.end()):
            return False  # "a fan of Christian Bale's films": a first name
        return bool(_SAID.search(t.norm[max(start, m.start() - 40):m.start()])) and bool(_PERSON.search(sentence))
    if tier == "amount" and not _money_marked(sentence) and not _BARE_AMOUNT.search(sentence):
        return False
    if not _PERSON.search(sentence):
        return False
    if kind == "health":
        near = t.norm[max(start, m.start() - 16):min(end, m.end() + 16)]
        return not _SOFTWARE.search(near)
    return tier == "person" or bool(_AMOUNT.search(sentence) or _BARE_AMOUNT.search(sentence))


def _of_software(t, m) -> bool:
    """A health word said of a piece of software, no person in the sentence: "this module is cancer
    to maintain" is about the module."""
    start, end = t.sentence(m.start())
    before, after = t.norm[max(start, m.start() - 24):m.start()], t.norm[m.end():min(end, m.end() + 24)]
    # the word itself may hold a software word ("blood test"): only the words around it count
    return bool(_CODE.search(before) or _CODE.search(after)) and not _PERSON.search(t.norm[start:end])


def _money_marked(sentence: str) -> bool:
    """Whether a sentence could hold a sum of money at all (a currency sign or word, a 12k)."""
    lower = sentence.lower()
    return any(c in sentence for c in "$£€¥￥元块万千") or any(w in lower for w in _CURRENCY_WORDS) or \
        any(c.isdigit() and lower[i + 1:i + 2] == "k" for i, c in enumerate(lower))
