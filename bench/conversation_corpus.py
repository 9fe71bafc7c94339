"""A generated English long-conversation set with known evidence, for recall quality.

Modelled on the public long-term chat memory benchmarks: `build()` returns conversations
between two named people, each a list of dated sessions (15 to 30 of them, 3 to 21 days
apart, 15 to 35 turns each, the speakers alternating), every turn's text beginning "Name: ".
The filler is small talk drawn from templates and word lists (greetings, weather, work,
food, family, plans, feelings, goodbyes), an acknowledgement, a statement and a question
combined in several ways, so that no two sessions read alike; three statements in ten touch
in passing on a topic of the planted facts ("We got into a whole debate about the gym"). Into it go planted facts, each
with the question a reader would ask about it and its evidence turn(s), of six kinds:

- adjacency: the other speaker asks ("What have you been reading lately?") and the next turn
  answers without the question's words ("Mostly old sci-fi, Dune again."); the question is
  about the answer ("What has Maria been reading lately?");
- possessive: "What is Melanie's dog called?", the evidence "Melanie: ... my dog Coco ...";
- date: "What did John do on 14 March 2023?" or "Which city did John visit in March 2023?",
  the evidence a turn of the session of that date sharing no word with the question but the name;
- temporal: "When did Jon start going to the gym?", the evidence "last week I started hitting
  the gym" (its session's date answers it);
- paraphrase: a single-hop question sharing some words with its evidence, not all;
- multi-hop: two evidence turns in different sessions ("Which cities has Evan visited for
  work?"); a hit is any of them.

Every fact is said once, by one speaker, and the other speaker uses the same topic words in
two other sessions without answering ("Maria, I haven't been reading much lately"), half the
time calling the fact's speaker by name, so that lexical overlap alone does not find the
evidence. Questions are plain English with their function
words. Same seed, same set.

    python bench/conversation_corpus.py    # counts, and the questions with their evidence
"""

import calendar
import random
import time

SEED = 17
CONVERSATIONS = 8
SESSIONS = (15, 30)
TURNS = (15, 35)
GAP_DAYS = (3, 21)
START = calendar.timegm((2023, 1, 8, 0, 0, 0))
DAY = 86400
DISTRACTORS = 2  # turns of the other speaker, in other sessions, with the fact's topic words

PAIRS = [("Maria", "John"), ("Melanie", "Caroline"), ("Jon", "Gina"), ("Audrey", "Andrew"),
         ("Evan", "Sam"), ("Joanna", "Nate"), ("Tim", "Priya"), ("Deborah", "Omar")]

# --- filler -----------------------------------------------------------------------------------

WORDS = {
    "food": ["tacos", "ramen", "a big salad", "leftover curry", "pancakes", "grilled cheese", "pho",
             "homemade pizza", "lentil soup", "sushi", "a burrito bowl", "fish and chips"],
    "place": ["the farmers market", "the park", "the mall", "my aunt's place", "the coffee shop on the corner",
              "the hardware store", "the post office", "the river path", "the bakery", "the train station"],
    "when": ["this morning", "last night", "on Sunday", "yesterday", "over the weekend", "after work",
             "on Friday", "earlier today", "the other day"],
    "feeling": ["tired", "excited", "a bit stressed", "really relaxed", "grateful", "restless", "happy",
                "overwhelmed", "calm", "kind of flat"],
    "person": ["my mom", "my dad", "my brother", "my neighbour", "a coworker", "my cousin", "an old friend",
               "my roommate", "my aunt", "my grandpa"],
    "weather": ["rainy", "freezing", "sunny", "windy", "humid", "grey", "gorgeous", "foggy"],
    "chore": ["laundry", "cleaning out the fridge", "paying bills", "fixing the leaky tap", "sorting the closet",
              "grocery shopping", "ironing", "vacuuming the stairs"],
    "work": ["a deadline", "back-to-back meetings", "a big presentation", "a tricky client", "the quarterly report",
             "training the new hire", "an audit", "a product launch"],
    "plan": ["a movie night", "a picnic", "a road trip", "dinner with friends", "a lazy Sunday", "a long walk",
             "a barbecue", "a day at the beach"],
    "season": ["spring", "summer", "autumn", "the holidays", "some sunshine", "a proper break"],
    "thing": ["the renovation", "your week", "the new schedule", "everything at home", "the project",
              "your family", "the commute"],
    "excuse": ["work has been insane", "my phone broke", "I was away for a few days", "I caught a cold",
               "the week just disappeared"],
}

OPENERS = ["Hey {other}! How's it going?", "Hi {other}! It's been a while, how are you?",
           "{other}! Got a minute? I have news.", "Good morning {other}! How was your week?",
           "Hey {other}, sorry I went quiet, {excuse}.", "Hi {other}! I was just thinking about you.",
           "Evening {other}! Are you around for a chat?", "Hey you! How have things been?"]
REPLIES = ["Hey {other}! So good to hear from you.", "Hi! I'm doing alright, thanks for asking.",
           "{other}! Perfect timing, I just sat down with a tea.", "Hey! Busy as ever, but good.",
           "Hi {other}, yes, I'm here. What's up?", "Oh hey! I was about to message you."]
CLOSERS = ["Anyway, I should run. Talk soon, {other}!", "Okay, I need to get dinner going. Bye!",
           "Take care, {other}, let's catch up next week.", "Gotta go, but this was nice. Speak soon!",
           "Thanks for listening, {other}. Good night!", "Alright, off to bed. Chat later!",
           "Bye {other}! Give my love to everyone."]
ACKS = ["That sounds lovely!", "Oh no, that's rough.", "Haha, I can imagine.", "Good for you!",
        "I totally get that.", "Wow, really?", "That's great to hear.", "Ugh, I feel you.", "Aw, that's sweet.",
        "No way!", "Same here, honestly.", "I'm glad you're doing okay.", "Ha, classic.", "Oh, nice.",
        "That makes sense.", "Fair enough."]
STATEMENTS = [
    "It's been so {weather} here {when}, I barely left the house.",
    "{When} I had {food} and it was exactly what I needed.",
    "I've been feeling {feeling} lately, {work} is eating all my time.",
    "I ran into {person} at {place} {when}, we chatted for ages.",
    "Spent most of {when} on {chore}. Thrilling stuff, I know.",
    "I'm thinking about {plan} if the weather holds.",
    "{Person} called {when} and we talked for an hour.",
    "Honestly I'm just {feeling}, it's been a long week.",
    "Work is busy with {work}, but I'm managing.",
    "I finally got a full night of sleep {when}, it made such a difference.",
    "We're planning {plan} soon, you should come!",
    "I tried a new recipe {when}, {food}, and it turned out great.",
    "I walked to {place} {when} just to clear my head.",
    "My phone died halfway through the day, so I was totally offline.",
    "The traffic {when} was unbelievable, it took me an hour to get home.",
    "I've been trying to drink more water and go to bed earlier.",
    "I keep meaning to call {person}, I really should.",
    "I'm so ready for {season}.",
    "{Person} dropped by {when} with {food}, which was sweet.",
    "I stayed in {when} and did absolutely nothing, it was perfect.",
    "There's {work} coming up and I'm {feeling} about it.",
    "I picked up some flowers at {place}, the kitchen looks so much brighter.",
    "{Person} is visiting soon, so I have to tidy up the whole flat.",
    "I burnt the toast {when} and set off the smoke alarm, very dignified.",
    "We finally booked {plan} for next month, I can't wait.",
    "I had the strangest dream last night, something about a train and {place}.",
    "It's my turn to host dinner, I'm thinking {food}.",
    "{Person} keeps sending me memes at midnight, I love it.",
    "My back is sore from {chore}, I'm getting old.",
    "I found a great little spot near {place} with really good coffee.",
    "I was {feeling} all day and couldn't really explain why.",
    "Did I tell you about {plan}? It fell through, sadly.",
]
# What people chat about anyway: the topics of the planted facts, said in passing by either
# speaker, so that a question's topic word is in several of its speaker's turns, not just one.
TOPICS = ["dogs", "a dog", "the cat", "sisters", "a best friend", "my boss", "a hometown", "the car", "a daughter",
          "a new restaurant", "the gym", "a new apartment", "the new job", "pottery", "getting promoted", "kittens",
          "the driving test", "family", "sugar", "a charity race", "moving to a new city", "the neighbours",
          "volunteer work", "money", "college", "being scared of things", "which country has the best food",
          "allergies", "the garden", "a book club", "evening classes", "pets", "hiking", "work trips",
          "reading", "music", "the long weekend", "the party", "the season", "learning a language", "board games",
          "an instrument", "coffee", "dessert", "that new show", "how to unwind after work"]
TOPIC_STATEMENTS = [
    "{Person} won't stop talking about {topic}.",
    "I saw a funny video about {topic} earlier.",
    "We got into a whole debate about {topic} at dinner {when}.",
    "I read an article about {topic} on the train.",
    "Funny, {person} asked me about {topic} {when}.",
    "Everyone at work has opinions about {topic}, it's exhausting.",
]
TOPIC_SHARE = 0.3  # of the mid-session statements
WORDS["topic"] = TOPICS

QUESTIONS = ["How was your day?", "Any plans for the weekend?", "How's {thing} going?",
             "Did you do anything fun {when}?", "How are you feeling about everything?", "What's new with you?",
             "How is your family doing?", "Did you get any rest?", "Are you still swamped?",
             "What are you up to tonight?", "Did you sort things out in the end?", "Do you want to meet up soon?",
             "How did {person} take the news?", "Are you sleeping any better?", "Anything exciting coming up?"]

# --- planted facts ----------------------------------------------------------------------------
# Each kind: (question, evidence sentences, distractor sentences of the other speaker, values).
# {X} is the speaker the fact is about, {v} its value, {date} the evidence session's date.

ADJACENCY = [  # (the other speaker's ask, answers, question, distractors, values)
    ("What have you been reading lately?", ["Mostly old sci-fi, {v} again.",
                                            "I picked up {v} at a flea market and can't put it down."],
     "What has {X} been reading lately?",
     ["I haven't been reading much lately, my eyes are tired by the evening.",
      "Reading before bed used to be my thing, lately it's just my phone."],
     ["Dune", "The Left Hand of Darkness", "Foundation", "Hyperion", "Solaris", "Neuromancer"]),
    ("What did you cook for the party?", ["A huge pot of {v}. There was nothing left by nine.",
                                          "{v}, my grandmother's recipe. Everyone wanted seconds."],
     "What did {X} cook for the party?",
     ["I never know what to cook for a party, so I just bring drinks.",
      "The party next door went on until two, I could hear every song."],
     ["chili", "paella", "lasagna", "jollof rice", "butter chicken", "gumbo"]),
    ("Where did you go over the long weekend?", ["We drove up to {v} and stayed in a tiny cabin by the water.",
                                                 "{v}! Just two nights, but it felt like a real holiday."],
     "Where did {X} go over the long weekend?",
     ["The long weekend went by so fast, I mostly slept.",
      "Next long weekend I want to go somewhere with no phone signal."],
     ["Lake Tahoe", "the Catskills", "Big Sur", "Cape Cod", "the Smoky Mountains", "Door County"]),
    ("What kind of music are you into these days?", ["Lots of {v}. I had it on the whole drive yesterday.",
                                                     "Honestly, {v}. My neighbours must love me."],
     "What kind of music is {X} into these days?",
     ["These days I barely put music on, it's all podcasts.",
      "My kind of music is whatever keeps me awake at the desk these days."],
     ["old jazz records", "k-pop", "bluegrass", "eighties synth pop", "bossa nova", "film soundtracks"]),
    ("What do you do to unwind after work?", ["{v}. Nothing else clears my head like that.",
                                                 "{v}, almost every evening now."],
     "What does {X} do to unwind after work?",
     ["After work I'm too tired to do anything, I just sit there.",
      "I really need a way to unwind, my shoulders are in knots."],
     ["Bouldering at the climbing hall", "Long bike rides along the river", "Jigsaw puzzles and a cup of tea",
      "Baking bread", "Playing chess online", "Yoga in the living room"]),
    ("Have you been watching anything good?", ["I'm halfway through {v} and it's so gripping.",
                                               "{v}! I stayed up way too late finishing it."],
     "What show has {X} been watching?",
     ["I haven't been watching anything, nothing good is on.",
      "My sister keeps watching cooking shows, it makes me hungry."],
     ["Severance", "The Bear", "Slow Horses", "Dark", "Ted Lasso", "Shogun"]),
    ("Which team are you rooting for this season?", ["The {v}, same as always, even when they lose.",
                                                     "Still the {v}. Don't laugh."],
     "Which team is {X} rooting for this season?",
     ["This season has been a mess for every team, I stopped checking scores.",
      "My dad roots for whichever team is winning, it drives me nuts."],
     ["Cubs", "Celtics", "Packers", "Sounders", "Maple Leafs", "Yankees"]),
    ("What language are you learning now?", ["{v}! Twenty minutes every morning on the train.",
                                             "{v}, slowly. The grammar is brutal."],
     "What language is {X} learning?",
     ["Learning a language as an adult is so hard, I gave up on mine.",
      "My niece is learning three languages at school, it's wild."],
     ["Portuguese", "Japanese", "Italian", "Korean", "Swahili", "Greek"]),
    ("What board game did you end up buying?", ["{v}. We played it until two in the morning.",
                                                "{v}, and I already lost four times."],
     "What board game did {X} end up buying?",
     ["I'm terrible at board games, I always end up losing.",
      "We were buying snacks for game night and forgot the cards."],
     ["Wingspan", "Catan", "Ticket to Ride", "Azul", "Pandemic", "Carcassonne"]),
    ("What instrument did you pick up in the end?", ["The {v}. My fingers hurt but I love it.",
                                                     "A {v}! Secondhand, but it sounds fine."],
     "What instrument did {X} pick up?",
     ["I played an instrument as a kid and hated every minute.",
      "Someone was playing an instrument in the subway and I just stood there listening."],
     ["ukulele", "cello", "banjo", "harmonica", "saxophone", "mandolin"]),
    ("How do you take your coffee?", ["{v}, every single day.", "{v}. Don't judge."],
     "How does {X} take coffee in the morning?",
     ["I've cut back on coffee, it was making me jittery in the morning.",
      "The coffee at the office tastes like burnt toast."],
     ["Black with a pinch of cinnamon", "With oat milk and honey", "Iced, even in winter", "Double espresso",
      "Milky and very sweet", "With a splash of cream"]),
    ("What's your go-to dessert?", ["{v}, no contest.", "Easy. {v}, every time."],
     "What is {X}'s go-to dessert?",
     ["I'm trying to skip dessert during the week.", "The dessert menu at that place was tiny."],
     ["Tiramisu", "Key lime pie", "Mango sticky rice", "Baklava", "Chocolate lava cake", "Churros"]),
]

POSSESSIVE = [
    ("What is {X}'s dog called?", ["I took my dog {v} to the beach and he refused to leave the water.",
                                   "My dog {v} stole a whole sandwich off the counter today."],
     ["My neighbour's dog barked all night again.", "There was a dog show at the park, so many fluffy ones."],
     ["Coco", "Biscuit", "Pepper", "Rufus", "Maple", "Ziggy"]),
    ("What is the name of {X}'s cat?", ["My cat {v} knocked a plant off the shelf at 3am.",
                                        "{v}, my cat, has decided my keyboard is her bed."],
     ["My landlord finally said yes to a cat, but I'm allergic.",
      "Did you see that video of the cat opening the fridge?"],
     ["Mochi", "Luna", "Tiger", "Pumpkin", "Nala", "Olive"]),
    ("What is {X}'s sister's name?", ["My sister {v} is coming to stay with us next week.",
                                      "{v}, my little sister, just got into law school!"],
     ["My friend's sister is getting married in June.", "Sisters are the best and the worst, right?"],
     ["Hannah", "Rosa", "Leila", "Bridget", "Mei", "Tamsin"]),
    ("Who is {X}'s best friend?", ["My best friend {v} and I have known each other since kindergarten.",
                                   "{v} is my best friend, always knows what to say."],
     ["Everyone needs a best friend who tells them the truth.",
      "My best friend from school moved abroad, we barely talk now."],
     ["Dana", "Marcus", "Ines", "Kofi", "Ruby", "Theo"]),
    ("What is the name of {X}'s boss?", ["My boss {v} finally approved my holiday!",
                                         "{v}, my boss, took the whole team out for lunch today."],
     ["My old boss used to call meetings at six on Fridays.",
      "Bosses never understand how long things actually take."],
     ["Mr. Whitaker", "Linda", "Gerald", "Ms. Okonkwo", "Raj", "Sandra"]),
    ("What is {X}'s hometown?", ["My hometown, {v}, has the best summer festival.",
                                 "I'm heading back to {v} for a week, it's my hometown after all."],
     ["My hometown has changed so much, I barely recognise it.", "Do you ever miss your hometown?"],
     ["Duluth", "Asheville", "Galway", "Tucson", "Savannah", "Bendigo"]),
    ("What make is {X}'s car?", ["My old {v} finally broke down on the highway, that car owes me nothing.",
                                 "I just washed the car, my trusty {v}, so of course it's going to rain."],
     ["My car needs new tyres before winter.", "A car alarm went off outside for an hour."],
     ["Subaru", "Volvo", "Honda", "Jeep", "Mini Cooper", "Toyota"]),
    ("How old is {X}'s daughter?", ["My daughter just turned {v}, can you believe it?",
                                    "Can't believe my daughter is {v} already."],
     ["My neighbour's daughter sells lemonade on the corner.",
      "Your daughter sounds like a handful, in the best way."],
     ["six", "nine", "twelve", "four", "sixteen", "three"]),
    ("What is {X}'s favourite restaurant?", ["My favourite place to eat is still {v}, the one near the station.",
                                             "We went to {v} again, I can't help it, it's my favourite."],
     ["That new restaurant downtown is way too loud.", "My favourite thing about Fridays is not cooking."],
     ["Luigi's", "the Blue Door", "Pho Saigon", "Casa Lupe", "Marlowe's", "the Golden Lotus"]),
]

DATE_DAY = [  # the question names the evidence session's day; the evidence says "today"
    (["I ran my first half marathon this morning, my legs are jelly."], ["A half marathon sounds like torture to me."]),
    (["We spent the whole day at the aquarium, the jellyfish room was unreal."],
     ["The aquarium downtown is closed for repairs."]),
    (["I finally repainted the kitchen today, it's a soft sage green now."],
     ["Our kitchen really needs a fresh coat of paint."]),
    (["Went kayaking on the river for the first time today, I fell in twice!"],
     ["I'd love to try kayaking someday, it looks peaceful."]),
    (["I gave a talk at the library about local history this afternoon."],
     ["The library has a new history section, I should go."]),
    (["We had a picnic in the botanical garden today, the tulips were out."],
     ["The botanical garden is free on Wednesdays, did you know?"]),
    (["I helped my cousin move house today and carried a piano up three floors."],
     ["Who even owns a piano these days?"]),
    (["Spent the afternoon at a workshop making fresh pasta from scratch."],
     ["Fresh pasta is one of those things I'll never have the patience for."]),
    (["Today I went to my first life drawing class, my sketches were awful but it was fun."],
     ["I can't draw to save my life, stick figures only."]),
    (["I spent all day at the flea market selling my old vinyl, made ninety dollars!"],
     ["Flea markets are dangerous for me, I always buy junk."]),
]
DATE_DAY_QUESTIONS = ["What did {X} do on {date}?", "What did {X} get up to on {date}?"]

DATE_MONTH = [  # the question names the evidence session's month
    ("Which city did {X} visit in {month}?", ["Just got back from {v}! The old town was gorgeous."],
     ["I keep wanting to visit somewhere new but never book anything.", "The city is so crowded this time of year."],
     ["Lisbon", "Prague", "Kyoto", "Montreal", "Edinburgh", "Seville"]),
    ("What did {X} buy in {month}?", ["I finally treated myself to a {v}, no regrets."],
     ["I'm trying not to buy anything this month.", "Buying furniture online is such a gamble."],
     ["standing desk", "espresso machine", "road bike", "record player", "new mattress", "telescope"]),
    ("Which concert did {X} go to in {month}?", ["Saw {v} live last night, my ears are still ringing!"],
     ["Concert tickets are so expensive now.", "I went to a concert once and lost a shoe in the crowd."],
     ["Florence and the Machine", "Coldplay", "Hozier", "Lizzo", "Arctic Monkeys", "Norah Jones"]),
    ("What did {X} celebrate in {month}?", ["We threw a little party for our {v}, it was perfect."],
     ["I'm not big on celebrations, too much fuss.", "We should celebrate something, anything, soon."],
     ["tenth wedding anniversary", "housewarming", "son's graduation", "retirement", "engagement",
      "fortieth birthday"]),
]

TEMPORAL = [  # the evidence says when relative to its session's date
    ("When did {X} start going to the gym?", ["Last week I finally started hitting the gym, three mornings so far."],
     ["I keep saying I'll start going to the gym, maybe next month.",
      "The gym by my place closed, so that's my excuse."]),
    ("When did {X} move into the new apartment?",
     ["We got the keys to the apartment on Saturday and carried boxes up four floors all weekend."],
     ["Moving is the worst, I never want to do it again.", "My new apartment hunt is going nowhere."]),
    ("When did {X} start the new job?", ["Monday was my first day at the new job, everyone was so nice."],
     ["Starting a new job is always so nerve-wracking.", "My brother just quit his job, no plan at all."]),
    ("When did {X} take up pottery?", ["Two weeks ago I joined a pottery studio downtown, my first bowl is lopsided."],
     ["Pottery looks so relaxing in videos.", "My aunt gave me a pottery mug for my birthday."]),
    ("When did {X} get promoted?", ["My manager told me yesterday that I'm getting promoted to team lead!"],
     ["Promotions at my company take forever.", "Everyone around me is getting promoted except me, haha."]),
    ("When did {X} adopt the kitten?", ["A few days ago we brought home a tiny kitten from the shelter."],
     ["The shelter near me is full of kittens right now.",
      "I'd adopt a kitten in a heartbeat if my landlord allowed it."]),
    ("When did {X} pass the driving test?", ["I passed my driving test this morning!! Third time lucky."],
     ["My driving test is still months away.", "My nephew failed his driving test on parallel parking."]),
    ("When did {X} last visit family?", ["I went to visit my parents last weekend, mom made her famous lasagna."],
     ["My family wants me to visit more often.", "Family dinners are always chaos at our place."]),
    ("When did {X} stop eating sugar?", ["Since the start of the month I've cut out sugar completely, even in tea."],
     ["I could never stop eating sugar, I'd be miserable.",
      "There's sugar in everything these days, have you noticed?"]),
    ("When did {X} run the charity race?",
     ["Did the charity 10k for the children's hospital this morning, and I didn't walk once!"],
     ["I signed up for a charity race once and then sprained my ankle.", "Running a race in this heat? No thanks."]),
]

PARAPHRASE = [
    ("Which city is {X} hoping to move to?", ["I'd really love to move to {v} one day, the whole vibe there is right."],
     ["Moving to another city is such a big decision.", "I'd never move away, I'd miss everyone too much."],
     ["Portland", "Barcelona", "Vancouver", "Melbourne", "Copenhagen", "Austin"]),
    ("What did {X} bake for the neighbours?", ["I baked {v} for the neighbours and left it on their doorstep."],
     ["The neighbours had a loud party again.", "I can't bake to save my life, everything burns."],
     ["a lemon drizzle cake", "a batch of cinnamon rolls", "a loaf of banana bread", "an apple pie",
      "a tray of brownies", "a carrot cake"]),
    ("What volunteer work does {X} do?", ["On Saturdays I volunteer at the {v}, mostly sorting donations."],
     ["I should volunteer more, I always say that.", "Our office has a volunteer day, but it's always on a Monday."],
     ["animal shelter", "food bank", "community garden", "children's library", "soup kitchen", "hospice"]),
    ("What job does {X} have?", ["I've worked as a {v} for six years now, best job I've had."],
     ["My job has been so slow this week.", "Job interviews on a Friday evening should be illegal."],
     ["nurse", "carpenter", "software tester", "high school teacher", "pharmacist", "graphic designer"]),
    ("What is {X} saving money for?", ["I'm putting money aside every month for a {v}."],
     ["Money is tight for everyone right now.", "Saving is hard when the rent keeps going up."],
     ["trip to Iceland", "new camera", "down payment on a house", "wedding", "motorbike", "master's degree"]),
    ("What sport did {X} play in college?", ["Back in college I was on the {v} team, believe it or not."],
     ["College feels like a hundred years ago.", "I was hopeless at every sport in school."],
     ["volleyball", "rowing", "lacrosse", "water polo", "rugby", "fencing"]),
    ("What is {X} most scared of?", ["I'm more scared of {v} than anything, always have been."],
     ["Horror films never get me scared at all.", "The storm last night scared the kids."],
     ["spiders", "deep water", "heights", "clowns", "thunderstorms", "bees"]),
    ("Which country did {X} grow up in?", ["I grew up in {v} until I was twelve, it's a beautiful country."],
     ["Growing up, we never went anywhere on holiday.", "Every country has its own idea of breakfast."],
     ["Kenya", "Poland", "Chile", "Vietnam", "Ireland", "Morocco"]),
    ("What allergy did the doctor find for {X}?", ["Turns out I'm allergic to {v}, the doctor confirmed it."],
     ["Allergy season is killing me.", "The doctor kept me waiting for an hour again."],
     ["shellfish", "peanuts", "pollen", "penicillin", "sesame", "latex"]),
]

MULTIHOP = [  # (question, first evidence, second evidence, distractors, values)
    ("Which cities has {X} visited for work?", "Flew to {v} for a client meeting, the hotel was awful.",
     "Another work trip, this time to {v}. At least the food was good.",
     ["Work travel sounds glamorous until you do it.", "I visited my aunt in the city last month."],
     ["Denver", "Atlanta", "Phoenix", "Boston", "Dallas", "Detroit"]),
    ("What does {X} grow in the garden?", "The {v} in my garden are finally ripe.",
     "I planted {v} this weekend, fingers crossed.",
     ["My garden is just weeds at this point.", "Gardening is not my thing, I even kill cacti."],
     ["tomatoes", "zucchini", "strawberries", "peppers", "beans", "pumpkins"]),
    ("Which books has {X}'s book club read?", "Our book club picked {v} this month, I'm loving it.",
     "Finished {v} just in time for club night.",
     ["I tried a book club once, nobody read the book.", "The club at work is mostly an excuse for wine."],
     ["Circe", "Educated", "The Overstory", "Piranesi", "Beloved", "Klara and the Sun"]),
    ("What classes is {X} taking?", "My {v} class on Tuesdays is the best part of my week.",
     "I also signed up for {v} on Thursdays, I'm so busy now.",
     ["Classes after work sound exhausting.", "My son's class is going on a trip to the zoo."],
     ["salsa", "photography", "first aid", "Spanish conversation", "woodworking", "creative writing"]),
    ("What pets has {X} had?", "When I was a kid we had a {v}, I still miss him.",
     "Growing up I also had a {v} named Gus.",
     ["Pets are so much work.", "The pet shop by me closed down."],
     ["hamster", "parrot", "turtle", "rabbit", "goldfish", "guinea pig"]),
    ("Where has {X} been hiking?", "We hiked up {v} on Sunday, the view was worth the blisters.",
     "{v} was muddy but so beautiful, we did the whole loop.",
     ["Hiking is not my idea of fun.", "My boots are still muddy from the last hike."],
     ["Mount Tam", "Angel's Landing", "the Dolomites", "Snowdon", "Table Mountain", "the Lake District"]),
]

PER_CONVERSATION = {"adjacency": 6, "possessive": 5, "date": 5, "temporal": 5, "paraphrase": 5, "multi-hop": 3}
KINDS = tuple(PER_CONVERSATION)
ABOUT = {  # a kind in a few words, for the bench's report
    "adjacency": "the answer is the turn after the other speaker's question",
    "possessive": "\"What is Melanie's dog called?\"",
    "date": "a day or a month named, its evidence sharing only the name",
    "temporal": "\"When did ...?\", the session's date answers",
    "paraphrase": "some words shared",
    "multi-hop": "two evidence turns in two sessions",
}
DAY_QUESTIONS = 3  # of the five date questions: on a day; the others in a month
LEADS = ["", "", "", "Oh! ", "Ha. ", "So yeah. ", "Honestly? ", "Guess what? "]  # a sentence of their own


def _fill(template: str, rng: random.Random, other: str) -> str:
    """A template with its word slots drawn; {When} and {Person} capitalised."""
    values = {k: rng.choice(v) for k, v in WORDS.items()}
    values |= {k.capitalize(): v[0].upper() + v[1:] for k, v in values.items()}
    return template.format(other=other, **values)


def chatter(rng: random.Random, position: str, other: str) -> str:
    """One turn of small talk: an opener, a reply to it, a closer, or (mid-session) an
    acknowledgement, a statement and a question in one of five combinations."""
    if position in ("opener", "reply", "closer"):
        return _fill(rng.choice({"opener": OPENERS, "reply": REPLIES, "closer": CLOSERS}[position]), rng, other)
    ack = rng.choice(ACKS)
    statement = rng.choice(TOPIC_STATEMENTS if rng.random() < TOPIC_SHARE else STATEMENTS)
    say, ask = _fill(statement, rng, other), _fill(rng.choice(QUESTIONS), rng, other)
    return rng.choice([f"{ack} {say}", say, f"{say} {ask}", f"{ack} {ask}", f"{ack} {say} {ask}"])


def _lead(rng: random.Random, sentence: str) -> str:
    """The sentence, capitalised (a value may open it), now and then after a word of its own."""
    return rng.choice(LEADS) + sentence[0].upper() + sentence[1:]


def _date(ts: int) -> str:
    t = time.gmtime(ts)
    return f"{t.tm_mday} {calendar.month_name[t.tm_mon]} {t.tm_year}"


class _Conversation:
    """The sessions of one pair, filled with small talk, and the turns planted so far."""

    def __init__(self, rng: random.Random, number: int, a: str, b: str):
        self.rng, self.a, self.b = rng, a, b
        self.sessions, self.used = [], set()
        day = START + number * 11 * DAY
        for k in range(rng.randint(*SESSIONS)):
            day += rng.randint(*GAP_DAYS) * DAY if k else 0
            start = day + rng.randint(8 * 60, 21 * 60) * 60
            first = rng.choice((a, b))
            n = rng.randint(*TURNS)
            speakers = [first if i % 2 == 0 else (b if first == a else a) for i in range(n)]
            turns = []
            for i, who in enumerate(speakers):
                other = b if who == a else a
                position = "opener" if i == 0 else "reply" if i == 1 else "closer" if i == n - 1 else "middle"
                turns.append([who, f"{who}: {chatter(rng, position, other)}", start + 45 * i + rng.randint(0, 30)])
            self.sessions.append({"id": f"{a.lower()}-{b.lower()}-{k + 1:02d}", "date": day, "turns": turns})

    def slot(self, speaker: str, avoid=(), sessions=None, pair: bool = False) -> tuple[int, int]:
        """A free mid-session turn (session, index) of `speaker` in one of `sessions` (default
        all) outside `avoid`; with `pair`, a free turn of the other speaker just before it too."""
        pool = [s for s in (range(len(self.sessions)) if sessions is None else sessions) if s not in avoid]
        for _ in range(1000):
            s = self.rng.choice(pool)
            turns = self.sessions[s]["turns"]
            i = self.rng.randrange(2, len(turns) - 1)
            if turns[i][0] == speaker and (s, i) not in self.used and not (pair and (s, i - 1) in self.used):
                self.used.update({(s, i), (s, i - 1)} if pair else {(s, i)})
                return s, i
        raise RuntimeError("no free turn left")  # a session count too small for the facts

    def say(self, s: int, i: int, text: str) -> tuple[str, int]:
        turn = self.sessions[s]["turns"][i]
        turn[1] = f"{turn[0]}: {text}"
        return (self.sessions[s]["id"], i + 2)

    def distract(self, speaker: str, sentences: list[str], avoid) -> None:
        """The other speaker's turns with the fact's topic words, half of them addressing the
        fact's speaker by name (as people do), so that neither the topic nor the name alone
        finds the evidence."""
        name = self.b if speaker == self.a else self.a
        for text in sentences[:DISTRACTORS]:
            s, i = self.slot(speaker, avoid)
            if self.rng.random() < 0.5:
                text = f"{name}, {text if text.startswith(('I ', 'I' + chr(39))) else text[0].lower() + text[1:]}"
            self.say(s, i, _lead(self.rng, text))


def _plant(conv: _Conversation, rng: random.Random) -> list[dict]:
    out = []

    def fact(kind: str, question: str, evidence: list, x: str):
        out.append({"kind": kind, "text": question, "evidence": evidence, "speaker": x})

    def people():
        x = rng.choice((conv.a, conv.b))
        return x, conv.b if x == conv.a else conv.a

    for ask, answers, question, distractors, values in rng.sample(ADJACENCY, PER_CONVERSATION["adjacency"]):
        x, y = people()
        s, i = conv.slot(x, pair=True)
        address = rng.choice(["", "", f"{x}, ", "So, ", "Oh, by the way, "])
        conv.say(s, i - 1, address + (ask[0].lower() + ask[1:] if address else ask))
        key = conv.say(s, i, _lead(rng, rng.choice(answers).format(v=rng.choice(values))))
        conv.distract(y, distractors, {s})
        fact("adjacency", question.format(X=x), [key], x)

    for question, evidence, distractors, values in rng.sample(POSSESSIVE, PER_CONVERSATION["possessive"]):
        x, y = people()
        s, i = conv.slot(x)
        key = conv.say(s, i, _lead(rng, rng.choice(evidence).format(v=rng.choice(values))))
        conv.distract(y, distractors, {s})
        fact("possessive", question.format(X=x), [key], x)

    days = rng.sample(DATE_DAY, DAY_QUESTIONS)
    months = rng.sample(DATE_MONTH, PER_CONVERSATION["date"] - DAY_QUESTIONS)
    dated = set()  # one day question a session: "What did X do on ..." has one answer
    for evidence, distractors in days:
        x, y = people()
        s, i = conv.slot(x, avoid=dated)
        dated.add(s)
        key = conv.say(s, i, _lead(rng, rng.choice(evidence)))
        conv.distract(y, distractors, {s})
        date = _date(conv.sessions[s]["date"])
        fact("date", rng.choice(DATE_DAY_QUESTIONS).format(X=x, date=date), [key], x)
    later = [k for k, session in enumerate(conv.sessions) if time.gmtime(session["date"]).tm_mday > 3]
    for question, evidence, distractors, values in months:
        x, y = people()
        s, i = conv.slot(x, sessions=later)  # "last night" is then in the month named too
        key = conv.say(s, i, _lead(rng, rng.choice(evidence).format(v=rng.choice(values))))
        conv.distract(y, distractors, {s})
        month = _date(conv.sessions[s]["date"]).split(" ", 1)[1]
        fact("date", question.format(X=x, month=month), [key], x)

    for question, evidence, distractors in rng.sample(TEMPORAL, PER_CONVERSATION["temporal"]):
        x, y = people()
        s, i = conv.slot(x)
        key = conv.say(s, i, _lead(rng, rng.choice(evidence)))
        conv.distract(y, distractors, {s})
        fact("temporal", question.format(X=x), [key], x)

    for question, evidence, distractors, values in rng.sample(PARAPHRASE, PER_CONVERSATION["paraphrase"]):
        x, y = people()
        s, i = conv.slot(x)
        key = conv.say(s, i, _lead(rng, rng.choice(evidence).format(v=rng.choice(values))))
        conv.distract(y, distractors, {s})
        fact("paraphrase", question.format(X=x), [key], x)

    for question, first, second, distractors, values in rng.sample(MULTIHOP, PER_CONVERSATION["multi-hop"]):
        x, y = people()
        v1, v2 = rng.sample(values, 2)
        s1, i1 = conv.slot(x)
        s2, i2 = conv.slot(x, avoid={s1})
        keys = [conv.say(s1, i1, _lead(rng, first.format(v=v1))), conv.say(s2, i2, _lead(rng, second.format(v=v2)))]
        conv.distract(y, distractors, {s1, s2})
        fact("multi-hop", question.format(X=x), keys, x)
    return out


def build(seed: int = SEED, conversations: int = CONVERSATIONS) -> list[dict]:
    """Conversations as dicts {speakers: (A, B), sessions: [{id, date, turns: [(speaker, text, ts)]}],
    questions: [{kind, text, speaker, evidence: [(session id, line)]}]}; a turn's line is its
    index + 2 (line 1 is the session header)."""
    rng = random.Random(seed)
    out = []
    for n in range(conversations):
        a, b = PAIRS[n % len(PAIRS)]
        conv = _Conversation(rng, n, a, b)
        questions = _plant(conv, rng)
        sessions = [{**s, "turns": [tuple(t) for t in s["turns"]]} for s in conv.sessions]
        out.append({"speakers": (a, b), "sessions": sessions, "questions": questions})
    return out


if __name__ == "__main__":
    convs = build()
    turns = {(s["id"], i + 2): t[1] for c in convs for s in c["sessions"] for i, t in enumerate(s["turns"])}
    sessions = [s for c in convs for s in c["sessions"]]
    questions = [q for c in convs for q in c["questions"]]
    print(f"{len(convs)} conversations, {len(sessions)} sessions, {len(turns)} turns, {len(questions)} questions")
    for q in questions:
        print(f"{q['kind']:10} {q['text']}")
        for key in q["evidence"]:
            date = next(_date(s["date"]) for s in sessions if s["id"] == key[0])
            print(f"{'':10}   {key[0]}:{key[1]} ({date}) {turns[key]}")
