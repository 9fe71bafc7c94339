"""A generated English + Chinese multi-session corpus with known answers, for recall quality.

`build()` returns (sessions, queries). 48 sessions (24 English, 24 Chinese) of 30 turns,
user and assistant alternating, filled with utterances of MADial-Bench's dialogues (the same
files bench/recall_quality.py reads) drawn by one seeded `random.Random`; into them go 80
planted facts, 40 a language, ten kinds of four each (a birthday, where something was put, a
wifi password, an appointment, an allergy, a flight, a recommended book, a project's tool, a
parking spot, a wished-for gift), each said once by the user in a random session of its
language, plus one near miss for each (the same person, place or thing in a sentence that
does not answer, or the same kind of fact about nobody named). The other three facts of its
kind are distractors too. Each query is the question a user would ask about one fact,
phrased naturally: sometimes with the fact's very words, sometimes with another form of them
("leave" for "leaves", "park" for "parked") or words the fact lacks ("what time", "礼物"), as
people ask; its answer is the (session, line) of the fact. Same seed, same corpus.

    python bench/quality_corpus.py    # print the facts and the questions
"""

import json
import os
import random
import re

SEED = 11
MADIAL = os.environ.get("ANIMA_BENCH_MADIAL", "/work/shared/bench/madial/data")
SESSIONS_PER_LANG = 24
TURNS = 30
START = 1767225600  # 2026-01-01T00:00:00Z
DAY = 86400

# kind -> (fact, question, near miss); slots filled from SLOTS, per instance.
EN = {
    "birthday": ("My {rel} {name}'s birthday is on {month} {day}, don't let me forget the cake.",
                 "When is {name}'s birthday?",
                 "{name} called about the plans for the weekend."),
    "stored": ("I put the {obj} in the {box} in the {room}.",
               "Where did I put the {obj}?",
               "I really need a new {obj} before the trip."),
    "wifi": ("The wifi password at {place} is {code}.",
             "What's the wifi password at {place}?",
             "The wifi at the office keeps dropping every afternoon."),
    "appointment": ("I booked a {dept} appointment with Dr. {doc} for {weekday} at {hour}.",
                    "When is my appointment with Dr. {doc}?",
                    "Dr. {doc} wrote a long article about sleep."),
    "allergy": ("{name} is allergic to {food}, so no {food} at the dinner.",
                "What is {name} allergic to?",
                "{name} cooked dinner for everyone on Friday."),
    "flight": ("Our flight to {city} leaves at {hour} from gate {gate}.",
               "What time does our flight to {city} leave?",
               "I read that {city} is lovely in the spring."),
    "book": ("{name} recommended the book {title} by {author}.",
             "Which book did {name} recommend?",
             "{name} is reading a lot these days."),
    "tool": ("For the {project} project we decided to use {tool}.",
             "What did we decide to use for the {project} project?",
             "The {project} project meeting ran over again."),
    "parking": ("I parked on level {level} of the {mall} garage, spot {spot}.",
                "Where did I park at {mall}?",
                "{mall} has a new bakery on the ground floor."),
    "gift": ("{name} mentioned wanting a {gift} for {occasion}.",
             "What does {name} want for {occasion}?",
             "{name} was in a great mood at {occasion} last year."),
}

ZH = {
    "birthday": ("我{rel}{name}的生日是{month}月{day}号，记得提前订蛋糕。",
                 "{name}的生日是几月几号？",
                 "{name}周末打电话来商量出去玩的事。"),
    "stored": ("我把{obj}放在{room}的{box}里了。",
               "我的{obj}放哪儿了？",
               "出发之前得买一个新的{obj}。"),
    "wifi": ("{place}的无线网密码是{code}。",
             "{place}的无线网密码是多少？",
             "公司的无线网下午老是断。"),
    "appointment": ("约了{weekday}下午{hour}点去{hospital}看{dept}。",
                    "我什么时候去看{dept}？",
                    "{hospital}门口新开了一家面包店。"),
    "allergy": ("{name}对{food}过敏，聚餐的时候别点。",
                "{name}对什么过敏？",
                "{name}周五给大家做了一顿晚饭。"),
    "flight": ("去{city}的航班{hour}点起飞，在{gate}号登机口。",
               "去{city}的航班几点起飞？",
               "听说{city}春天特别美。"),
    "book": ("{name}推荐我看《{title}》这本书。",
             "{name}推荐的那本书叫什么？",
             "{name}最近在读很多东西。"),
    "tool": ("{project}项目最后决定用{tool}来做。",
             "{project}项目用的是什么？",
             "{project}项目的会又开超时了。"),
    "parking": ("车停在{mall}地下{level}层{spot}号车位。",
                "我的车停在{mall}哪里了？",
                "{mall}一楼新开了一家面包店。"),
    "gift": ("{name}说{occasion}想要一个{gift}。",
             "{name}{occasion}想要什么礼物？",
             "{name}去年{occasion}的时候心情特别好。"),
}

SLOTS = {
    "en": {
        "name": ["Anna", "Marcus", "Priya", "Tobias", "Elena", "Hiroshi", "Fatima", "Lucas", "Ingrid", "Omar",
                 "Greta", "Diego", "Nadia", "Felix", "Sofia", "Kwame", "Ruth", "Mateo", "Lena", "Yusuf"],
        "rel": ["sister", "brother", "cousin", "neighbour", "colleague", "friend"],
        "month": ["January", "March", "April", "June", "August", "October", "November"],
        "day": [str(d) for d in range(2, 29)],
        "obj": ["spare car keys", "passport", "warranty card", "old laptop charger", "tax folder",
                "camera battery", "wedding album", "bike lock key"],
        "box": ["top drawer", "blue shoebox", "metal tin", "filing cabinet", "red suitcase", "sewing basket"],
        "room": ["study", "hallway", "guest bedroom", "garage", "attic", "kitchen"],
        "place": ["the lake cabin", "grandma's flat", "the beach house", "the studio", "the ski lodge"],
        "code": ["bluefinch42", "otter-7731", "mangoTree9", "quietHarbor5", "pine88cone"],
        "dept": ["dentist", "cardiology", "physiotherapy", "dermatology", "hearing"],
        "doc": ["Patel", "Okafor", "Lindqvist", "Moreau", "Castillo", "Nakamura"],
        "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
        "hour": ["7:40", "9:15", "10:30", "13:05", "16:50", "18:20"],
        "food": ["peanuts", "shellfish", "kiwi", "sesame", "walnuts", "strawberries"],
        "city": ["Lisbon", "Osaka", "Nairobi", "Montreal", "Krakow", "Valparaiso"],
        "gate": ["B12", "C4", "A31", "D7", "E19"],
        "title": ["The Quiet Orchard", "Salt and Compass", "A Map of Small Rivers", "Nine Winters",
                  "The Lantern Keeper", "Glass Mountains"],
        "author": ["Mira Solberg", "Jonas Reyes", "Adaeze Obi", "Clara Whitfield", "Ren Takeda"],
        "project": ["Heron", "Lighthouse", "Bramble", "Copperfield", "Nimbus", "Tangerine"],
        "tool": ["PostgreSQL", "Redis", "Terraform", "Kafka", "SQLite", "Elixir"],
        "level": ["2", "3", "4", "5", "6"],
        "mall": ["Riverside Mall", "Northgate Centre", "Harbour Plaza", "Elm Park Mall", "Westfield Square"],
        "spot": ["B12", "C40", "F7", "K21", "M3"],
        "gift": ["record player", "telescope", "pottery class", "hiking backpack", "chess set", "bread maker"],
        "occasion": ["Christmas", "graduation", "the retirement party", "the anniversary", "New Year"],
    },
    "zh": {
        "name": ["王芳", "李娜", "张伟", "刘洋", "陈静", "杨帆", "赵磊", "黄蕾", "周敏", "吴昊",
                 "徐丽", "孙涛", "马超", "朱琳", "胡军", "郭晶", "何平", "高翔", "林峰", "罗娟"],
        "rel": ["姐姐", "表哥", "同事", "邻居", "大学同学", "舅舅"],
        "month": [str(m) for m in range(1, 13)],
        "day": [str(d) for d in range(1, 29)],
        "obj": ["护照", "备用钥匙", "保修卡", "旧充电器", "户口本", "相机电池", "结婚相册", "自行车锁"],
        "box": ["抽屉", "鞋盒", "铁皮盒", "文件柜", "行李箱", "针线篮"],
        "room": ["书房", "玄关", "客房", "车库", "阁楼", "厨房"],
        "place": ["湖边小屋", "奶奶家", "海边别墅", "工作室", "滑雪场宾馆"],
        "code": ["bluefinch42", "otter7731", "mango2024", "harbor555", "pine88cone"],
        "hospital": ["人民医院", "中医院", "口腔医院", "社区医院", "妇幼保健院"],
        "dept": ["牙医", "眼科", "骨科", "皮肤科", "耳鼻喉科"],
        "weekday": ["周一", "周二", "周三", "周四", "周五"],
        "hour": ["2", "3", "4", "5"],
        "food": ["花生", "海鲜", "芒果", "芝麻", "核桃", "菠萝"],
        "city": ["成都", "大阪", "昆明", "哈尔滨", "厦门", "乌鲁木齐"],
        "gate": ["12", "23", "35", "47", "8"],
        "title": ["小王子", "活着", "平凡的世界", "百年孤独", "围城", "边城"],
        "project": ["白鹭", "灯塔", "青藤", "铜雀", "云雀", "橘子"],
        "tool": ["飞书文档", "钉钉", "石墨文档", "腾讯会议", "禅道"],
        "level": ["一", "二", "三"],
        "mall": ["万达广场", "来福士", "大悦城", "万象城", "银泰百货"],
        "spot": ["B12", "C40", "F7", "K21", "M3"],
        "gift": ["黑胶唱机", "天文望远镜", "陶艺工具", "登山包", "象棋", "面包机"],
        "occasion": ["春节", "毕业", "生日", "中秋", "元旦"],
    },
}
PER_KIND = 4
_SLOT = re.compile(r"\{(\w+)\}")
_TAG = re.compile(r"^\s*<[^<>:]{1,40}>\s*:\s*")


def clean(turn: str) -> str:
    """A MADial dialogue line without its `<Speaker>:` tag and the quotes or brackets around it."""
    return _TAG.sub("", turn.strip()).strip().strip('"<>“”').strip()


def filler(lang: str) -> list[str]:
    """The dialogue utterances of MADial-Bench in one language, speaker tags and quotes removed."""
    path = os.path.join(MADIAL, "ch/MADial-Bench-zh-dialogue.json" if lang == "zh" else
                        "en/MADial-Bench-en-dialogue.json")
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                for turn in json.loads(line)["dialogue"]:
                    text = clean(turn)
                    if text and text not in ("BOD", "EOD"):
                        out.append(text)
    return sorted(set(out))


def _instances(lang: str, rng: random.Random) -> list[tuple[str, str, str, str]]:
    """(kind, fact, question, near miss) for PER_KIND instances of every kind, slots drawn so that
    no two instances of a kind share a slot value that their question uses."""
    kinds = EN if lang == "en" else ZH
    out = []
    for kind, (fact, question, near) in kinds.items():
        keys = sorted(set(_SLOT.findall(fact + question + near)))
        pools = {k: rng.sample(SLOTS[lang][k], len(SLOTS[lang][k])) for k in keys}
        for i in range(PER_KIND):
            values = {k: pool[i % len(pool)] for k, pool in pools.items()}
            out.append((kind, fact.format(**values), question.format(**values), near.format(**values)))
    return out


def build(seed: int = SEED):
    """Sessions as dicts {id, lang, turns: [(role, text, ts)]} and queries as dicts {lang, kind, text,
    answer: (session id, line)}; a turn's line is its index + 2 (line 1 is the header)."""
    rng = random.Random(seed)
    sessions, queries = [], []
    for lang in ("en", "zh"):
        pool = filler(lang)
        group = []
        for n in range(SESSIONS_PER_LANG):
            day = START + (len(sessions) + n) * DAY
            turns = [["user" if i % 2 == 0 else "assistant", rng.choice(pool), day + 60 * i] for i in range(TURNS)]
            group.append({"id": f"{lang}-{n:02d}", "lang": lang, "turns": turns})
        planted = set()
        for kind, fact, question, near in _instances(lang, rng):
            for text, is_fact in ((fact, True), (near, False)):
                while True:  # a user turn of a random session not yet used for a planted sentence
                    s = rng.randrange(len(group))
                    i = 2 * rng.randrange(TURNS // 2)
                    if (s, i) not in planted:
                        break
                planted.add((s, i))
                group[s]["turns"][i][1] = text
                if is_fact:
                    queries.append({"lang": lang, "kind": kind, "text": question,
                                    "answer": (group[s]["id"], i + 2)})
        sessions += group
    for s in sessions:
        s["turns"] = [tuple(t) for t in s["turns"]]
    return sessions, queries


if __name__ == "__main__":
    sessions, queries = build()
    turns = {(s["id"], i + 2): t[1] for s in sessions for i, t in enumerate(s["turns"])}
    print(f"{len(sessions)} sessions, {len(turns)} turns, {len(queries)} queries")
    for q in queries:
        print(f"{q['lang']} {q['kind']:12} {q['text']}  ->  {q['answer'][0]}:{q['answer'][1]} {turns[q['answer']]}")
